// `kvlab selftest`: the course's whole self-test (checks/quiz/selftest.hpp), asked one by one and
// scored per layer and against 004 §C's exit criteria, or printed as a worksheet with --answers.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace kvlab::app {

struct SelftestFlags {
  std::optional<std::int64_t> seed;  ///< absent: drawn from the random device, and printed
  std::optional<std::string> lang;   ///< en or zh; absent: KVLAB_LANG, else en
  std::string format = "text";       ///< text, md (worksheets) or json (with --answers)
  std::vector<std::string> only;     ///< layers to ask (empty: all)
  std::optional<int> count;          ///< ask this many, drawn at random (absent: every question)
  bool answers = false;              ///< print the worksheet with answers; read nothing
};

/// Adds the `selftest` subcommand with its options bound to `flags`.
CLI::App* add_selftest_command(CLI::App& app, SelftestFlags& flags);

/// Runs the self-test. With flags.answers prints the worksheet (questions, then answers with the
/// worked arithmetic) or, with --format json, {"questions": [{"id", "source", ...}], ...}.
/// Otherwise asks each question on `out` and reads one line per answer from `in`: a line that
/// does not parse, or a number in the wrong unit (GB for GiB: converted and shown), is explained
/// and the question asked again; a blank line skips; end of input ends the session; then the
/// score per layer and per exit criterion. Returns 0. Throws InputError for bad flags
/// (--format json without --answers, a bad --lang or KVLAB_LANG, --count beyond the questions).
int run_selftest(const SelftestFlags& flags, std::istream& in, std::ostream& out);

}  // namespace kvlab::app

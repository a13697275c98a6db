// `kvlab quiz`: the course's estimation drills (checks/quiz), asked one by one or printed as a
// worksheet with --answers.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace kvlab::app {

struct QuizFlags {
  std::int64_t seed = 1234;
  int count = 5;
  std::vector<std::string> kinds;  ///< empty: every kind in turn
  bool answers = false;            ///< print questions with answers; read nothing
  std::string format = "text";     ///< text or md
};

/// Adds the `quiz` subcommand with its options bound to `flags`.
CLI::App* add_quiz_command(CLI::App& app, QuizFlags& flags);

/// Runs the quiz: with flags.answers prints the worksheet to `out`; otherwise asks each
/// question on `out`, reads one answer per line from `in` with the self-test's reader, its unit
/// optional (EOF ends the quiz early; a line that is not a number, e.g. "1,5" or "nan", or has an
/// unknown unit is explained and the question asked again, as is an answer in another unit, shown
/// converted; a blank line skips), says whether it is accepted and shows the worked answer, then
/// the score. Returns the exit status (0). Throws InputError for bad flags.
int run_quiz(const QuizFlags& flags, std::istream& in, std::ostream& out);

}  // namespace kvlab::app

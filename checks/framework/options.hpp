// A check's own command-line options, declared without CLI11.
//
// CLI11 2.1 is a header-only library whose header costs about 6 s of compile per translation unit
// at -O3 and 12 s under ASan + UBSan (docs/perf.md) - three quarters of a small check's build. So
// the checks see only this facade: OptionSet::add_option / add_flag with the same names and
// chaining as CLI11 (`sub.add_option("--layers", opts_.layers, "...")->check(IntRange(1, 8))`),
// implemented once in options.cpp, the only file under checks/ that includes <CLI/CLI.hpp>.
//
// Validators. CLI::Range is not enough on its own: it lets NaN through (every comparison with NaN
// is false), CLI11 2.1 saturates integers that overflow (99999999999999999999 becomes 2^63 - 1),
// reads "0x10" as 16 and "" as 0. So integer options use IntRange (base-10 digits only, overflow
// rejected) and real-valued options FiniteRange; IsMember restricts a string to a fixed set.
#pragma once

#include <cstdint>
#include <limits>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace CLI {
class App;
class Option;
class Validator;
}  // namespace CLI

namespace kvlab::checks {

/// A rule an option's text must satisfy before it is converted; a failure is one line naming the
/// option and the allowed values, and exit status 2.
class Validator {
 public:
  explicit Validator(std::shared_ptr<const CLI::Validator> impl) : impl_(std::move(impl)) {}
  /// The CLI11 validator, so that code binding CLI11 directly (apps/kvlab/*_command.cpp) can
  /// write `->check(FiniteRange(0, 1))` too, and `->transform(IntRange(1, 64))` (see IntRange).
  operator const CLI::Validator&() const { return *impl_; }

 private:
  std::shared_ptr<const CLI::Validator> impl_;
};

/// Accepts a finite decimal number in [lo, hi], or (lo, hi] when `lo_open` ("7e9", "0.5", "-1.25");
/// rejects nan, inf, hex ("0x10"), surrounding spaces, trailing text and out-of-range values.
Validator FiniteRange(double lo, double hi, bool lo_open = false);

/// Accepts a base-10 integer in [lo, hi]; rejects anything else, naming the allowed range. It
/// rewrites what it accepted in canonical decimal ("010" -> "10"), since CLI11 converts integers
/// with strtoll's base 0 (octal after a leading 0): Option::check applies it as a transform, and
/// code binding CLI11 directly must write `->transform(IntRange(...))`, not `->check`.
Validator IntRange(std::int64_t lo, std::int64_t hi);

/// Accepts a token count in [1, hi]: digits, or digits with k (× 1,024) or M (× 1,048,576), e.g.
/// "4096", "4k", "128k", "1M" (io/units.hpp parse_token_count); the value reaches the integer
/// option as its digits, so bind it with Option::transform, not check.
Validator TokenCount(std::int64_t hi = std::numeric_limits<std::int64_t>::max());

/// Accepts exactly one of `allowed` (case-sensitive).
Validator IsMember(std::vector<std::string> allowed);

/// Accepts no value at all: `reason` (e.g. "spec-real computes in float32 and takes no --dtype")
/// is the error, for a common option a check cannot honour (OptionSet::find); --help then lists
/// no allowed values for it.
Validator Refused(std::string reason);

/// One declared option. Pointers to it stay valid as long as the OptionSet that made it.
class Option {
 public:
  explicit Option(CLI::Option* impl) : impl_(impl) {}
  /// Adds a validator (applied to every value given); returns this option for chaining.
  Option* check(const Validator& v);
  /// Adds a validator that may rewrite the value before it is converted (TokenCount: "4k" ->
  /// "4096"); returns this option for chaining.
  Option* transform(const Validator& v);
  /// The placeholder --help shows for the value (e.g. "FILE").
  Option* type_name(const std::string& name);
  /// Refuses this option and `other` on one command line (CLI11's "--a excludes --b").
  Option* excludes(Option* other);
  /// Shows the bound variable's current value as the default in --help ("[8]").
  Option* show_default();
  /// Replaces the help text --help shows; returns this option for chaining.
  Option* description(const std::string& help);
  /// Whether the option appeared on the command line (after parsing).
  bool given() const;

 private:
  CLI::Option* impl_;
};

/// A check's subcommand seen through the facade: Check::bind(OptionSet&) declares the options,
/// each bound to a variable that holds its default until the command line is parsed.
class OptionSet {
 public:
  explicit OptionSet(CLI::App& sub) : sub_(sub) {}
  OptionSet(const OptionSet&) = delete;
  OptionSet& operator=(const OptionSet&) = delete;

  Option* add_option(const std::string& name, int& target, const std::string& help);
  Option* add_option(const std::string& name, std::int64_t& target, const std::string& help);
  Option* add_option(const std::string& name, std::uint64_t& target, const std::string& help);
  Option* add_option(const std::string& name, double& target, const std::string& help);
  Option* add_option(const std::string& name, std::string& target, const std::string& help);
  /// An option whose absence matters (the check derives a default): empty unless given.
  Option* add_option(const std::string& name, std::optional<int>& target, const std::string& help);
  Option* add_option(const std::string& name, std::optional<std::int64_t>& target, const std::string& help);
  Option* add_option(const std::string& name, std::optional<double>& target, const std::string& help);
  Option* add_option(const std::string& name, std::optional<std::string>& target, const std::string& help);
  /// A list option: one or more values after the flag ("--contexts 128 512 4096").
  Option* add_option(const std::string& name, std::vector<int>& target, const std::string& help);
  Option* add_option(const std::string& name, std::vector<std::int64_t>& target, const std::string& help);
  Option* add_option(const std::string& name, std::vector<double>& target, const std::string& help);
  /// A switch: `target` becomes true when the flag is given.
  Option* add_flag(const std::string& name, bool& target, const std::string& help);
  /// An option the front end already declared on this subcommand (the common --dtype, --seed, ...),
  /// for a check whose help must say what it does with it (spec-real: float32 only); nullptr when
  /// the subcommand has no such option (a bare one in a unit test).
  Option* find(const std::string& name);

 private:
  Option* keep(CLI::Option* impl);
  CLI::App& sub_;
  std::deque<Option> options_;  // a deque: growing it never moves the Options handed out
};

}  // namespace kvlab::checks

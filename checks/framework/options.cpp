// The option facade of options.hpp over CLI11: the one translation unit under checks/ that pays
// for <CLI/CLI.hpp>.
#include "framework/options.hpp"
#include "framework/path_option.hpp"

#include <charconv>
#include <cmath>
#include <cstdlib>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "core/error.hpp"
#include "io/units.hpp"

namespace kvlab::checks {

namespace {

Validator wrap(CLI::Validator v) { return Validator(std::make_shared<const CLI::Validator>(std::move(v))); }

// The name Refused gives its validator, so that Option::check knows to hide the allowed values.
constexpr const char* kRefusedName = "kvlab-refused";
// The name IntRange gives its validator, so that Option::check applies it as a transform: it
// rewrites the value it accepted in canonical decimal, which CLI11 then converts. CLI11 reads an
// integer with strtoll's base 0, so "010" would otherwise become 8 after IntRange had accepted it
// as ten.
constexpr const char* kIntRangeName = "kvlab-int-range";

/// Whether a decimal that std::from_chars found out of a double's range is too large (1e400) rather
/// than too close to 0 (1e-400): strtod gives ±HUGE_VAL for the first (kvlab never calls
/// setlocale, so it reads the same decimal point as from_chars).
bool overflows(const std::string& decimal) { return std::isinf(std::strtod(decimal.c_str(), nullptr)); }

}  // namespace

Validator FiniteRange(double lo, double hi, bool lo_open) {
  const std::string range = fmt::format("{}{}, {}]", lo_open ? "(" : "[", lo, hi);
  return wrap(CLI::Validator(
      [lo, hi, lo_open, range](std::string& input) -> std::string {
        double v = 0;
        const char* first = input.data();
        const char* last = first + input.size();
        if (first != last && *first == '+') ++first;  // from_chars takes no leading '+'
        const auto [end, ec] = std::from_chars(first, last, v, std::chars_format::general);
        if (first == last || end != last || (ec != std::errc() && ec != std::errc::result_out_of_range))
          return fmt::format("'{}' is not a decimal number; must be a finite number in {}", input, range);
        if (ec == std::errc::result_out_of_range)  // a number all the same, beyond what a double holds
          return fmt::format("must be a finite number in {} (got {}, {} a double)", range, input,
                             overflows(input) ? "beyond the range of" : "too close to 0 for");
        if (!std::isfinite(v) || v < lo || v > hi || (lo_open && v == lo))
          return fmt::format("must be a finite number in {} (got {})", range, input);
        return {};
      },
      "FINITE in " + range));
}

Validator IntRange(std::int64_t lo, std::int64_t hi) {
  return wrap(CLI::Validator(
      [lo, hi](std::string& input) -> std::string {
        std::int64_t v = 0;
        const char* first = input.data();
        const char* last = first + input.size();
        if (first != last && *first == '+') ++first;  // from_chars takes no leading '+'
        const auto [end, ec] = std::from_chars(first, last, v);
        if (first == last || end != last || (ec != std::errc() && ec != std::errc::result_out_of_range))
          return fmt::format("'{}' is not an integer; must be an integer in [{}, {}]", input, lo, hi);
        if (ec == std::errc::result_out_of_range || v < lo || v > hi)
          return fmt::format("must be an integer in [{}, {}] (got {})", lo, hi, input);
        input = std::to_string(v);  // "010" -> "10", "+5" -> "5": what CLI11 converts is what was checked
        return {};
      },
      fmt::format("INT in [{}, {}]", lo, hi), kIntRangeName));
}

Validator TokenCount(std::int64_t hi) {
  return wrap(CLI::Validator(
      [hi](std::string& input) -> std::string {
        try {
          input = std::to_string(parse_token_count("", input, static_cast<std::uint64_t>(hi)));
          return {};
        } catch (const InputError& e) {
          std::string msg = e.what();  // ": must be a token count ..."; CLI11 names the option
          return msg.substr(msg.find("must"));
        }
      },
      fmt::format("TOKENS in [1, {}] (4k, 128k, 1M)", hi)));
}

Validator IsMember(std::vector<std::string> allowed) { return wrap(CLI::IsMember(std::move(allowed))); }

Validator Refused(std::string reason) {
  CLI::Validator v([reason](std::string&) -> std::string { return reason; }, "");
  v.name(kRefusedName);
  return wrap(std::move(v));
}

Validator PathGiven() {
  return wrap(CLI::Validator(
      [](std::string& input) -> std::string {
        return input.empty() ? "empty path (an unset shell variable?); give a file name, or leave the option out" : "";
      },
      ""));
}

Option* Option::check(const Validator& v) {
  const auto& cli = static_cast<const CLI::Validator&>(v);
  if (cli.get_name() == kRefusedName)  // no value is taken: --help lists none (an IsMember set before)
    for (int i = 0;; ++i) try {
        impl_->get_validator(i)->description("");
      } catch (const CLI::OptionNotFound&) {
        break;
      }
  if (cli.get_name() == kIntRangeName)
    impl_->transform(cli);
  else
    impl_->check(cli);
  return this;
}

Option* Option::transform(const Validator& v) {
  impl_->transform(static_cast<const CLI::Validator&>(v));
  return this;
}

Option* Option::type_name(const std::string& name) {
  impl_->type_name(name);
  return this;
}

Option* Option::excludes(Option* other) {
  impl_->excludes(other->impl_);
  return this;
}

Option* Option::show_default() {
  impl_->capture_default_str();
  return this;
}

Option* Option::description(const std::string& help) {
  impl_->description(help);
  return this;
}

bool Option::given() const { return impl_->count() > 0; }

Option* OptionSet::find(const std::string& name) {
  CLI::Option* impl = sub_.get_option_no_throw(name);
  return impl ? keep(impl) : nullptr;
}

Option* OptionSet::keep(CLI::Option* impl) { return &options_.emplace_back(impl); }

Option* OptionSet::add_option(const std::string& name, int& target, const std::string& help) {
  return keep(sub_.add_option(name, target, help));
}
Option* OptionSet::add_option(const std::string& name, std::int64_t& target, const std::string& help) {
  return keep(sub_.add_option(name, target, help));
}
Option* OptionSet::add_option(const std::string& name, std::uint64_t& target, const std::string& help) {
  return keep(sub_.add_option(name, target, help));
}
Option* OptionSet::add_option(const std::string& name, double& target, const std::string& help) {
  return keep(sub_.add_option(name, target, help));
}
Option* OptionSet::add_option(const std::string& name, std::string& target, const std::string& help) {
  return keep(sub_.add_option(name, target, help));
}
Option* OptionSet::add_option(const std::string& name, std::optional<int>& target, const std::string& help) {
  return keep(sub_.add_option(name, target, help));
}
Option* OptionSet::add_option(const std::string& name, std::optional<std::int64_t>& target,
                              const std::string& help) {
  return keep(sub_.add_option(name, target, help));
}
Option* OptionSet::add_option(const std::string& name, std::optional<double>& target, const std::string& help) {
  return keep(sub_.add_option(name, target, help));
}
Option* OptionSet::add_option(const std::string& name, std::optional<std::string>& target,
                              const std::string& help) {
  return keep(sub_.add_option(name, target, help));
}
Option* OptionSet::add_option(const std::string& name, std::vector<int>& target, const std::string& help) {
  return keep(sub_.add_option(name, target, help));
}
Option* OptionSet::add_option(const std::string& name, std::vector<std::int64_t>& target,
                              const std::string& help) {
  return keep(sub_.add_option(name, target, help));
}
Option* OptionSet::add_option(const std::string& name, std::vector<double>& target, const std::string& help) {
  return keep(sub_.add_option(name, target, help));
}
Option* OptionSet::add_flag(const std::string& name, bool& target, const std::string& help) {
  return keep(sub_.add_flag(name, target, help));
}

}  // namespace kvlab::checks

#include "io/units.hpp"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "core/error.hpp"

namespace kvlab {
namespace {

/// The leading decimal of `s` (digits, one '.', an optional exponent) and the rest; nullopt when
/// `s` does not start with one. Signs are not accepted: every quantity here is positive, and
/// "-1" is then refused as "not a number" with the flag's rule rather than parsed.
struct Split {
  double value = 0.0;
  std::string unit;
};

std::optional<Split> split_number(const std::string& s) {
  std::size_t i = 0, digits = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i, ++digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i, ++digits;
  }
  if (digits == 0) return std::nullopt;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    std::size_t j = i + 1;
    if (j < s.size() && (s[j] == '+' || s[j] == '-')) ++j;
    const std::size_t exp_start = j;
    while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
    if (j > exp_start) i = j;  // "5E" without digits: the E belongs to the unit ("5EFLOPS")
  }
  // strtod on the digits only: they are plain ASCII, and the C locale's '.' is what the grammar
  // allows (kvlab never calls setlocale).
  const std::string number = s.substr(0, i);
  Split out;
  out.value = std::strtod(number.c_str(), nullptr);
  out.unit = s.substr(i);
  return out;
}

/// The multiplier of a prefix: "" 1, k/K 1e3, M 1e6, G 1e9, T 1e12, P 1e15, E 1e18, Ki 2^10 ...
/// Pi 2^50; nullopt for anything else.
std::optional<double> prefix_factor(std::string_view p) {
  if (p.empty()) return 1.0;
  const bool binary = p.size() == 2 && p[1] == 'i';
  if (p.size() != 1 && !binary) return std::nullopt;
  const char c = p[0] == 'k' ? 'K' : p[0];
  static constexpr std::string_view kLetters = "KMGTPE";
  const auto pos = kLetters.find(c);
  if (pos == std::string_view::npos) return std::nullopt;
  if (binary) return pos < 5 ? std::ldexp(1.0, 10 * static_cast<int>(pos + 1)) : std::optional<double>{};
  return std::pow(10.0, 3.0 * static_cast<double>(pos + 1));
}

std::string lower(std::string s) {
  for (auto& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

/// `value` × the prefix of `unit` once `suffix` is stripped from its end (compared as given, or
/// lower-cased when `any_case`); nullopt when the unit is neither empty nor prefix + suffix.
std::optional<double> scaled(const Split& s, const std::string& suffix, bool any_case) {
  if (s.unit.empty()) return s.value;
  const std::string unit = any_case ? lower(s.unit) : s.unit;
  const std::string want = any_case ? lower(suffix) : suffix;
  if (unit.size() < want.size() || unit.compare(unit.size() - want.size(), want.size(), want) != 0)
    return std::nullopt;
  // The prefix keeps its case even for FLOPS, so that "1.2Mflops" is mega and "5mFLOPS" refused.
  const auto factor = prefix_factor(std::string_view(s.unit).substr(0, s.unit.size() - want.size()));
  if (!factor) return std::nullopt;
  return s.value * *factor;
}

[[noreturn]] void refuse(const std::string& flag, const std::string& rule, const std::string& text) {
  throw InputError(fmt::format("{}: must be {} (got '{}')", flag, rule, printable(text, 60)));
}

double parse_rate(const std::string& flag, const std::string& text, const std::string& rule,
                  const std::vector<std::string>& suffixes, bool any_case) {
  const auto split = split_number(text);
  if (!split) refuse(flag, rule, text);
  std::optional<double> v;
  for (const auto& suffix : suffixes)
    if (!v) v = scaled(*split, suffix, any_case);
  if (!v || !std::isfinite(*v) || *v < 1.0 || *v > kMaxHardwareRate) refuse(flag, rule, text);
  return *v;
}

}  // namespace

double parse_bandwidth(const std::string& flag, const std::string& text) {
  return parse_rate(flag, text,
                    "a bandwidth in [1 B/s, 1e21 B/s] such as 3.35TB/s, 900GiB/s or 2039e9 (a bare "
                    "number is bytes/s; B = bytes, prefixes k M G T P E or Ki Mi Gi Ti Pi)",
                    {"B/s"}, false);
}

double parse_flops(const std::string& flag, const std::string& text) {
  return parse_rate(flag, text,
                    "a rate in [1, 1e21] FLOP/s such as 989.5TFLOPS, 312TFLOP/s or 9.895e14 (a bare "
                    "number is FLOP/s; prefixes k M G T P E)",
                    {"FLOPS", "FLOP/s"}, true);
}

std::uint64_t parse_memory(const std::string& flag, const std::string& text) {
  const std::string rule =
      "a whole number of bytes in [1, 2^53] such as 80GiB, 141GB or 24e9 (a bare number is bytes; "
      "B = bytes, prefixes k M G T P E or Ki Mi Gi Ti Pi)";
  const auto split = split_number(text);
  if (!split) refuse(flag, rule, text);
  const auto v = scaled(*split, "B", false);
  constexpr double kMax = 9007199254740992.0;  // 2^53
  if (!v || !std::isfinite(*v) || *v < 1.0 || *v > kMax || *v != std::trunc(*v)) refuse(flag, rule, text);
  return static_cast<std::uint64_t>(*v);
}

std::uint64_t parse_token_count(const std::string& flag, const std::string& text, std::uint64_t max) {
  const std::string rule = fmt::format(
      "a token count in [1, {}]: digits, or digits with k (× 1,024) or M (× 1,048,576), e.g. 4096, "
      "4k, 128k, 1M", max);
  std::size_t i = 0;
  std::uint64_t n = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
    const std::uint64_t d = static_cast<std::uint64_t>(text[i] - '0');
    if (n > (max - d) / 10) refuse(flag, rule, text);  // n·10 + d > max: also before any overflow
    n = n * 10 + d;
    ++i;
  }
  if (i == 0) refuse(flag, rule, text);
  const std::string suffix = text.substr(i);
  std::uint64_t factor = 1;
  if (suffix == "k" || suffix == "K") factor = 1024;
  else if (suffix == "M") factor = 1024 * 1024;
  else if (!suffix.empty()) refuse(flag, rule, text);
  if (n == 0 || n > max / factor) refuse(flag, rule, text);
  return n * factor;
}

}  // namespace kvlab

#include "report/result.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

namespace kvlab {

namespace {

/// One unit of the last written digit of a plain decimal; the trailing zeros of an integer are
/// not significant ("140" -> 10, "0" -> 1). Throws std::invalid_argument when `number` is not one.
double unit_of_last_digit(const std::string& number, double* value) {
  std::size_t used = 0;
  *value = std::stod(number, &used);
  if (used != number.size()) throw std::invalid_argument("Stated::parse: not a decimal: " + number);
  double unit = 1.0;
  if (auto dot = number.find('.'); dot != std::string::npos) {
    unit = std::pow(10.0, -static_cast<double>(number.size() - dot - 1));
  } else {
    for (auto it = number.rbegin(); it != number.rend() && *it == '0' && number.size() > 1; ++it) unit *= 10.0;
  }
  return unit;
}

}  // namespace

bool Stated::approximate(const std::string& words) {
  static const char* const marks[] = {"≈", "约", "~", "～", "大概", "往往", "左右", "about", "About", "roughly"};
  return std::any_of(std::begin(marks), std::end(marks),
                     [&](const char* m) { return words.find(m) != std::string::npos; });
}

Stated Stated::parse(const std::string& number, const std::string& words, double scale) {
  double v = 0.0;
  const double unit = unit_of_last_digit(number, &v) * scale;
  Stated s;
  s.text = words.empty() ? number : words;
  s.value = v * scale;
  s.precision = 0.5 * unit;
  if (approximate(words)) s.above = unit;
  return s;
}

Stated Stated::range(const std::string& low, const std::string& high, const std::string& words, double scale) {
  const Stated lo = parse(low, words, scale), hi = parse(high, words, scale);
  if (lo.value > hi.value) throw std::invalid_argument("Stated::range: low > high: " + low + " > " + high);
  // The midpoint, snapped to half the finer figure's last unit: "0.6"–"0.7" gives 0.65, not the
  // 0.6499999999999999 of (0.6 + 0.7) / 2 in binary.
  const double step = std::min(lo.precision, hi.precision);
  const double mid = std::round(0.5 * (lo.value + hi.value) / step) * step;
  const double from = lo.low(), to = hi.high();
  Stated s;
  s.text = words;
  s.value = mid;
  s.precision = mid - from;
  if (to - mid != mid - from) s.above = to - mid;
  return s;
}

Stated Stated::flags(std::string id) && {
  erratum = std::move(id);
  return std::move(*this);
}

double Expectation::largest_possible_deviation() const {
  if (!attainable) return std::numeric_limits<double>::infinity();
  return std::max(std::abs(expected - attainable->first), std::abs(attainable->second - expected));
}

bool Expectation::can_fail() const { return !(tolerance >= largest_possible_deviation()); }

bool Expectation::holds() const {
  // A value the quantity cannot take (an α of 1.2) is a bug, whatever the tolerance.
  const bool possible = !attainable || (measured >= attainable->first && measured <= attainable->second);
  return std::isfinite(measured) && std::isfinite(expected) && possible && std::abs(measured - expected) <= tolerance;
}

bool Expectation::is_erratum() const {
  // A tiny relative slack keeps binary rounding of the stated decimal from deciding the case.
  if (!stated || !std::isfinite(measured)) return false;
  const double slack = 1e-9 * std::max(stated->precision, stated->above.value_or(0.0));
  return measured < stated->low() - slack || measured > stated->high() + slack;
}

bool Result::passed() const {
  if (!skipped.empty()) return true;  // exit 0; the writers say "skipped", never "PASS"
  if (expectations.empty()) return false;  // a check with nothing to compare proves nothing
  for (const auto& e : expectations)
    if (!e.holds()) return false;
  return true;
}

std::vector<std::string> Result::errata() const {
  std::vector<std::string> out;
  for (const auto& e : expectations) {
    if (!e.is_erratum()) continue;
    // The catalogue's id first ("E4 000 §2.3 — …"): `kvlab errata --id E4` explains it.
    out.push_back(fmt::format("{}{} — {}: the document says {}; kvlab measures {:.6g} {}{}{}",
                              e.stated->erratum.empty() ? "" : e.stated->erratum + " ", e.source,
                              e.quantity, e.stated->text, e.measured, e.unit,
                              e.arithmetic.empty() ? "" : " = ", e.arithmetic));
  }
  return out;
}

namespace {

template <class V>
void set_metric(Result& r, const std::string& key, V value) {
  for (auto& [k, v] : r.metrics)
    if (k == key) {
      v = value;
      return;
    }
  r.metrics.emplace_back(key, value);
}

}  // namespace

void Result::metric(const std::string& key, double value) { set_metric(*this, key, value); }

void Result::metric_exact(const std::string& key, std::uint64_t value) { set_metric(*this, key, value); }

double Result::metric_value(const std::string& key) const {
  for (const auto& [k, v] : metrics)
    if (k == key) return std::visit([](auto x) { return static_cast<double>(x); }, v);
  throw std::out_of_range("no metric " + key);
}

Expectation& Result::expect(Expectation e) {
  expectations.push_back(std::move(e));
  return expectations.back();
}

}  // namespace kvlab

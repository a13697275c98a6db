#include "report/result.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

namespace kvlab {

Stated Stated::parse(const std::string& number, const std::string& words, double scale) {
  std::size_t used = 0;
  const double v = std::stod(number, &used);
  if (used != number.size()) throw std::invalid_argument("Stated::parse: not a decimal: " + number);
  double unit_of_last_digit = 1.0;
  if (auto dot = number.find('.'); dot != std::string::npos) {
    unit_of_last_digit = std::pow(10.0, -static_cast<double>(number.size() - dot - 1));
  } else {
    for (auto it = number.rbegin(); it != number.rend() && *it == '0' && number.size() > 1; ++it)
      unit_of_last_digit *= 10.0;
  }
  return Stated{words.empty() ? number : words, v * scale, 0.5 * unit_of_last_digit * scale};
}

double Expectation::largest_possible_deviation() const {
  if (!attainable) return std::numeric_limits<double>::infinity();
  return std::max(std::abs(expected - attainable->first), std::abs(attainable->second - expected));
}

bool Expectation::holds() const {
  return std::isfinite(measured) && std::isfinite(expected) &&
         std::abs(measured - expected) <= tolerance;
}

bool Expectation::is_erratum() const {
  // A tiny relative slack keeps binary rounding of the stated decimal from deciding the case.
  return stated && std::isfinite(measured) &&
         std::abs(measured - stated->value) > stated->precision * (1.0 + 1e-9);
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
    out.push_back(fmt::format("{} — {}: the document says {}; kvlab measures {:.6g} {}{}{}",
                              e.source, e.quantity, e.stated->text, e.measured, e.unit,
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

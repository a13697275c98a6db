#include "io/json_read.hpp"

#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace kvlab {
namespace {

using nlohmann::json;

/// nlohmann's message without its tag, its position (the caller gives one) and its "last read"
/// echo of the input: "[json.exception.parse_error.101] parse error at line 1, column 2: syntax
/// error while parsing value - unexpected ']'; last read: ']'" -> "syntax error while parsing
/// value - unexpected ']'".
std::string reason_of(const std::string& what) {
  std::string r = what;
  if (r.rfind("[json.exception.", 0) == 0)
    if (const auto p = r.find("] "); p != std::string::npos) r = r.substr(p + 2);
  if (r.rfind("parse error", 0) == 0)
    if (const auto p = r.find(": "); p != std::string::npos) r = r.substr(p + 2);
  if (const auto p = r.find("; last read"); p != std::string::npos) r.resize(p);
  return printable(r, 100);
}

/// The first pass: nesting depth, duplicate keys and syntax, without building anything.
class Checker final : public nlohmann::json_sax<json> {
 public:
  explicit Checker(const JsonBounds& bounds) : bounds_(bounds) {}

  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }

  bool start_object(std::size_t) override {
    if (!enter()) return false;
    if (bounds_.reject_duplicate_keys) keys_.emplace_back();
    return true;
  }
  bool key(string_t& k) override {
    if (!bounds_.reject_duplicate_keys || keys_.back().insert(k).second) return true;
    error_.emplace(JsonReadError::Kind::duplicate_key, fmt::format("key '{}' appears twice", printable(k, 60)), 0);
    return false;
  }
  bool end_object() override {
    --depth_;
    if (bounds_.reject_duplicate_keys) keys_.pop_back();
    return true;
  }
  bool start_array(std::size_t) override { return enter(); }
  bool end_array() override {
    --depth_;
    return true;
  }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& ex) override {
    // nlohmann's ids: 1xx parse_error, 4xx out_of_range (406: a number beyond a double).
    error_.emplace(ex.id < 200 ? JsonReadError::Kind::syntax : JsonReadError::Kind::unrepresentable,
                   reason_of(ex.what()), position);
    return false;
  }

  /// Set when the pass stopped early.
  const std::optional<JsonReadError>& error() const { return error_; }

 private:
  bool enter() {
    if (++depth_ <= bounds_.max_depth) return true;
    error_.emplace(JsonReadError::Kind::too_deep, fmt::format("nesting deeper than {} levels", bounds_.max_depth), 0);
    return false;
  }

  JsonBounds bounds_;
  std::size_t depth_ = 0;
  std::vector<std::unordered_set<std::string>> keys_;  // one per open object
  std::optional<JsonReadError> error_;
};

}  // namespace

json parse_json_bounded(std::string_view text, const JsonBounds& bounds) {
  Checker checker(bounds);
  if (!json::sax_parse(text, &checker)) {
    if (checker.error()) throw *checker.error();
    throw JsonReadError(JsonReadError::Kind::syntax, "not valid JSON", 0);  // not reached: every stop sets error()
  }
  // The text is valid and shallow: the second pass builds it (nlohmann keeps the last of two
  // equal keys, which the first pass refused when asked to).
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    throw JsonReadError(JsonReadError::Kind::unrepresentable, reason_of(e.what()), 0);
  }
}

std::string json_brief(const json& v, std::size_t max) {
  switch (v.type()) {
    case json::value_t::array: return "an array";
    case json::value_t::object: return "an object";
    case json::value_t::discarded: return "nothing";
    default: break;
  }
  // A scalar: dump() does not recurse. ASCII escapes keep the message one line of ASCII.
  return printable(v.dump(-1, ' ', true, json::error_handler_t::replace), max);
}

}  // namespace kvlab

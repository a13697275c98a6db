// JSON from a file a user hands kvlab (config.json, a catalogue entry, a safetensors header or its
// kvlab.config metadata), read in linear time and to a bounded depth.
//
// nlohmann::json parses iteratively, but several of its operations on a parsed value recurse once
// per level of nesting (dump(), the copy constructor, comparisons): 16 MB of '[' is 16 million
// levels, and printing such a value in an error message overflowed the stack. Its parser callback,
// the usual way to see duplicate keys, costs time quadratic in the number of keys of an object
// (each closing brace scans the parent for discarded members): 40,000 tensors took minutes.
// parse_json_bounded therefore checks the text first with a SAX handler (one pass, a depth counter,
// one hash set per open object when duplicates are refused) and only then builds the value, which
// then has at most kMaxJsonDepth levels. json_brief shows a value in a message without recursing.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "core/error.hpp"

namespace kvlab {

/// Deepest nesting of arrays and objects kvlab reads: 64 levels. A safetensors header needs 3
/// (header, tensor, shape), a Hugging Face config.json a handful (rope_scaling, quantization_config).
inline constexpr std::size_t kMaxJsonDepth = 64;

/// What parse_json_bounded refuses besides malformed JSON.
struct JsonBounds {
  std::size_t max_depth = kMaxJsonDepth;  ///< levels of nesting; the top-level value is level 1
  bool reject_duplicate_keys = false;     ///< a key twice in one object is an error, not "last wins"
};

/// Why parse_json_bounded refused a text. what() is the reason alone, one line of printable ASCII,
/// without the file's name (the caller adds it, with byte() where that helps).
class JsonReadError : public InputError {
 public:
  /// What was refused: malformed JSON; valid JSON nlohmann cannot hold (a number beyond a
  /// double, e.g. 1e400); nesting too deep; a duplicate key. byte() is nlohmann's position (the
  /// count of bytes read when the error was seen) for the first two, 0 for the others.
  enum class Kind { syntax, unrepresentable, too_deep, duplicate_key };
  JsonReadError(Kind kind, const std::string& reason, std::size_t byte)
      : InputError(reason), kind_(kind), byte_(byte) {}
  Kind kind() const { return kind_; }
  std::size_t byte() const { return byte_; }

 private:
  Kind kind_;
  std::size_t byte_;
};

/// Parses `text` as one JSON value, in time linear in its length. Throws JsonReadError for
/// malformed JSON (nlohmann's reason without its echo of the input, e.g. "syntax error while
/// parsing value - unexpected ']'"), a number beyond a double ("number overflow ..."), nesting
/// deeper than bounds.max_depth ("nesting deeper than 64 levels") and, with
/// bounds.reject_duplicate_keys, a key given twice in one object ("key 'x' appears twice").
nlohmann::json parse_json_bounded(std::string_view text, const JsonBounds& bounds = {});

/// A JSON value as a message shows it, without recursion: a scalar as JSON text (a string quoted),
/// cut to `max` characters of printable ASCII; an array or object as "an array" / "an object".
std::string json_brief(const nlohmann::json& value, std::size_t max = 60);

}  // namespace kvlab

// Errors kvlab distinguishes, and overflow-checked integer arithmetic.
//
// InputError: the user's input (an option, a config file, a catalogue name) is invalid. The CLI
// prints its message as one line and exits with status 2. Messages name the field and the allowed
// values, e.g. "n_kv_head: must divide n_head = 32 (got 5)".
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace kvlab {

/// Invalid user input: bad option value, malformed file, unknown name. Maps to exit status 2.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// a * b for byte and element counts; throws InputError naming `what` when the product does not
/// fit in 64 bits (e.g. a context length times a batch that no machine could hold).
std::uint64_t checked_mul(std::uint64_t a, std::uint64_t b, const std::string& what);

/// a + b, with the same overflow rule as checked_mul.
std::uint64_t checked_add(std::uint64_t a, std::uint64_t b, const std::string& what);

/// Throws InputError "<field>: must be in [lo, hi] (got v)" unless lo <= v <= hi.
void require_range(const std::string& field, long long v, long long lo, long long hi);

/// Throws InputError unless v is finite and lo <= v <= hi (NaN and inf are rejected).
void require_finite_range(const std::string& field, double v, double lo, double hi);

/// `s` with every byte outside printable ASCII replaced by '?', cut to `max` characters plus
/// "...": error messages stay one line even for a path or a file full of random bytes.
std::string printable(const std::string& s, std::size_t max = 200);

}  // namespace kvlab

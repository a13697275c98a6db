// Quantities typed on the command line with their units: a device's bandwidth, peak rate and
// memory (`--bandwidth 3.35TB/s`, `--peak-flops 989.5TFLOPS`, `--memory 80GiB`) and token counts
// with size suffixes (`--ctx 4k`, `128k`, `1M`).
//
// Grammar (no spaces; a shell would split them anyway):
//   number  = a finite decimal as written in a datasheet: 3.35, 989.5, 80, 7e9, 1.2E+12
//   rate    = number [prefix] "B/s"        bytes per second       bare number: bytes/s
//   flops   = number [prefix] ("FLOPS" | "FLOP/s")  (any case)    bare number: FLOP/s
//   memory  = number [prefix] "B"          bytes                  bare number: bytes
//   prefix  = k K M G T P E (decimal: 10^3 ... 10^18)  |  Ki Mi Gi Ti Pi (binary: 2^10 ... 2^50)
//   tokens  = digits [k | K | M]           k = 1,024 tokens, M = 1,048,576 (as "4k context" and
//                                          "128k" = 131,072 are meant), bare digits: tokens
// A lower-case "b" (bits) is refused in a byte unit rather than read as bytes, and so is a prefix
// that is not in the list (m would be milli). Every failure is one InputError line naming the flag
// and the accepted forms.
#pragma once

#include <cstdint>
#include <string>

namespace kvlab {

/// Largest rate accepted (FLOP/s or bytes/s), as for a catalogue GPU: 1e21.
inline constexpr double kMaxHardwareRate = 1e21;

/// `text` as bytes per second ("3.35TB/s" = 3.35e12, "900GiB/s", "2039e9"), finite and in
/// [1, 1e21]. Throws InputError "FLAG: ..." for 0, a negative number, nan, inf, or a unit that
/// does not parse.
double parse_bandwidth(const std::string& flag, const std::string& text);

/// `text` as FLOP/s ("989.5TFLOPS" = 9.895e14, "312TFLOP/s", "1.2e15"), finite and in [1, 1e21].
/// Throws InputError "FLAG: ..." as parse_bandwidth.
double parse_flops(const std::string& flag, const std::string& text);

/// `text` as a whole number of bytes ("80GiB" = 85,899,345,920, "141GB" = 141e9, "24e9"), in
/// [1, 2^53]. Throws InputError "FLAG: ..." as parse_bandwidth, and for a fraction of a byte.
std::uint64_t parse_memory(const std::string& flag, const std::string& text);

/// `text` as a token count ("4096", "4k" = 4,096, "128k" = 131,072, "1M" = 1,048,576), in
/// [1, max]. Throws InputError "FLAG: must be ... (got 'x')" for anything else.
std::uint64_t parse_token_count(const std::string& flag, const std::string& text,
                                std::uint64_t max = (std::uint64_t{1} << 62));

}  // namespace kvlab

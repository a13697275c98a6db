// The training text: Debian's `fortunes` package (/usr/share/games/fortunes), byte-level
// (vocabulary 256), with a fixed train/validation split (004 §3, the mini-GPT).
//
//   files   : the plain-text fortune files directly in the directory, in byte-wise sorted name
//             order; skipped: the off/ subdirectory (offensive fortunes, another package), every
//             *.dat (strfile index) and *.u8 (UTF-8 copies, symlinks) file and every symlink.
//   fortunes: a file splits at lines that are exactly "%"; a fortune is the text between two such
//             lines (its newlines kept); fortunes with no non-blank character are dropped.
//   split   : fortune number i (0-based, over all files in order) goes to validation when
//             i % 10 == 9, else to train. Each split is its fortunes in order, each followed by
//             the line "%\n", so the model also learns where a fortune ends.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kvlab::train {

/// Where Debian's fortunes-min / fortunes packages install the text.
inline constexpr const char* kFortunesDir = "/usr/share/games/fortunes";

/// Byte-level vocabulary: one token per byte value.
inline constexpr int kByteVocab = 256;

/// The split text, bytes as tokens 0..255.
struct Corpus {
  std::vector<int> train;                  ///< train tokens (bytes), fortunes i % 10 != 9
  std::vector<int> validation;             ///< validation tokens, fortunes i % 10 == 9
  std::vector<std::string> files;          ///< file names read, in order
  std::size_t n_fortunes_train = 0;
  std::size_t n_fortunes_validation = 0;
};

/// Splits one file's text into its fortunes (text between lines exactly "%", newline kept;
/// blank fortunes dropped). A final fortune without a closing "%" line counts too.
std::vector<std::string> split_fortunes(const std::string& text);

/// Most bytes load_fortunes reads from one directory: 64 MiB (Debian's fortunes: about 2.6 MB).
inline constexpr std::size_t kMaxFortunesBytes = std::size_t{64} << 20;

/// Reads the corpus from `dir` (see the header for the rules). Returns std::nullopt when `dir`
/// does not exist or holds no fortune file (callers print fortunes_skip_line and skip). Throws
/// InputError, one line naming the file, when a fortune file cannot be read (e.g. no permission),
/// and naming `dir` when the files hold more than kMaxFortunesBytes; callers that took `dir`
/// from an option prefix the option's name.
std::optional<Corpus> load_fortunes(const std::string& dir = kFortunesDir);

/// The one line a check or command prints when the text is absent: names the directory and
/// the Debian package that installs it.
std::string fortunes_skip_line(const std::string& dir = kFortunesDir);

/// FNV-1a 64-bit parameters (Fowler, Noll, Vo; http://www.isthe.com/chongo/tech/comp/fnv/):
/// offset basis 14695981039346656037 and prime 2^40 + 2^8 + 0xb3 = 1099511628211.
inline constexpr std::uint64_t kFnv1aOffsetBasis = 0xcbf29ce484222325ull;
inline constexpr std::uint64_t kFnv1aPrime = 0x100000001b3ull;

/// FNV-1a 64-bit hash of a token sequence's bytes (each token taken as one byte, t & 0xff),
/// printed so that a run can say which text it trained on (the package version may change the
/// corpus). E.g. the empty sequence hashes to the offset basis, "a" to 0xaf63dc4c8601ec8c.
std::uint64_t corpus_hash(const std::vector<int>& tokens);

}  // namespace kvlab::train

// The course's numeric tables, regenerated from the library (`kvlab cheatsheet`).
//
// The three course documents announce tables whose bodies are missing from the text we have (000
// §2.2, §4.1, §4.5, §8.1, §9.1–9.3; 004 §2.5; 003 after Q7), or that a student must rebuild by
// hand (004 groups 3–6, §3.3; 003 Q6). Each table here is one function, in document order, that
// computes every number with the library functions the checks use: cost/kv_cache (kv-size),
// cost/roofline (roofline), cost/capacity (max-batch), cost/generation_flops (cache-flops),
// quant/quant_cache (kv-quant), spec/expected_tokens (spec-etau), attention/causal_mask
// (causal-mask). No figure is typed in: the document's own figures appear only in footnotes,
// beside the computed value and the arithmetic, with the erratum of docs/claims.md they belong to.
//
//   kvlab cheatsheet                      every table, in document order
//   kvlab cheatsheet --list               the table names and their sources
//   kvlab cheatsheet 000-9.1 --ctx 32768 --format md
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "cost/kv_cache.hpp"
#include "report/result.hpp"
#include "report/writers.hpp"

namespace kvlab {

/// Largest --ctx and --batch the cheatsheet accepts: 2^21 tokens (2M) and 2^16 sequences keep every
/// count of the catalogue's largest cache (gpt-3-175b, 4.7 MB per token) inside 64 bits, also in
/// bits (kv_cache_size counts bits): 2^21 · 2^16 · 2^22.2 B · 8 = 2^62.2.
inline constexpr std::uint64_t kMaxCheatsheetCtx = std::uint64_t{1} << 21;
inline constexpr std::uint64_t kMaxCheatsheetBatch = std::uint64_t{1} << 16;

/// The overrides of `kvlab cheatsheet`; an empty field keeps each table's own default (the
/// document's: 4096 tokens, batch 1, fp16, a100-80gb, unless the table says otherwise).
struct CheatsheetParams {
  std::optional<std::uint64_t> ctx;     ///< --ctx: cached tokens per sequence, [1, kMaxCheatsheetCtx]
  std::optional<std::uint64_t> batch;   ///< --batch: sequences, [1, kMaxCheatsheetBatch]
  std::optional<CacheDtype> kv_dtype;   ///< --kv-dtype: element type of the cache
  std::optional<std::string> gpu;       ///< --gpu: a catalogue GPU (data/hardware)
};

/// One table of the cheatsheet: the table, its source, the assumptions it was computed under, and
/// footnotes (the document's own figures with the arithmetic, errata, what a column means).
struct CheatTable {
  std::string name;         ///< stable id, e.g. "000-2.2"
  std::string source;       ///< document and section, e.g. "000 §2.2"
  std::string assumptions;  ///< dtype, context, batch, hardware, constants, in one line
  Table table;              ///< title = what the table shows
  std::vector<std::string> notes;  ///< footnotes, in order
};

/// One entry of the catalogue of tables: its id, source and the overrides it honours.
struct CheatsheetEntry {
  std::string name;                    ///< e.g. "000-2.2"
  std::string source;                  ///< e.g. "000 §2.2"
  std::string summary;                 ///< one line: what the table shows
  std::vector<std::string> overrides;  ///< which of "--ctx", "--batch", "--kv-dtype", "--gpu" apply
  CheatTable (*build)(const CheatsheetParams&);  ///< computes the table (throws InputError on bad params)
};

/// Every table, in document order (000, then 004, then 003 — the order of docs/claims.md).
const std::vector<CheatsheetEntry>& cheatsheet_entries();

/// The entry named `name`. Throws InputError "cheatsheet: no table named 'x' (known: ...)".
const CheatsheetEntry& cheatsheet_entry(const std::string& name);

/// Builds the tables named in `names` (all of them, in document order, when empty) under `p`.
/// A given override that a table does not use adds a footnote saying so. Throws InputError for an
/// unknown name, a --ctx or --batch outside its range, or an unknown --gpu (each naming the option).
std::vector<CheatTable> build_cheatsheet(const std::vector<std::string>& names, const CheatsheetParams& p);

/// Writes the tables: text (a heading, source, assumptions, table, footnotes per table), md (the
/// same as markdown: docs/cheatsheet.md is this output), csv ('#' lines for the heading, source,
/// assumptions and footnotes) or json ({"tables": [{name, source, assumptions, title, columns,
/// rows, notes}]}).
void write_cheatsheet(std::ostream& out, const std::vector<CheatTable>& tables, Format f);

/// The α a chain of K drafts must reach for a speedup `s` = E[τ] / (1 + K·c) (000 §7.4, §9.2;
/// spec/expected_tokens), minimised over K = 1..k_max, with the K that attains it. Empty when no
/// K ≤ k_max reaches s (s·(1 + K·c) > K + 1 for every K). Throws InputError for s < 1, c < 0 or
/// not finite, k_max outside [1, 256].
struct AlphaForSpeedup {
  double alpha = 0.0;  ///< the smallest α over K
  int k = 0;           ///< the K that attains it
};
std::optional<AlphaForSpeedup> alpha_for_speedup(double s, double c, int k_max);

}  // namespace kvlab

// kvlab's errata of the course documents: data/errata.json, read and validated.
//
// Each entry is one place where a document's figure or statement differs from what kvlab derives
// or measures, or where it rests on a convention the student should know (docs/claims.md,
// "Document errata", lists the same ids with the same sources: ctest claims.errata). An entry a
// check flags with an ERRATUM line names that check in `flagged_by`, and the check's Stated carries
// the entry's id (report/result.hpp): tests/lib/errata/errata_test.cpp proves the two agree at the defaults.
#pragma once

#include <string>
#include <vector>

namespace kvlab {

/// One entry of the errata catalogue. Texts are one line each; `document` quotes the document
/// (Chinese, as written), the *_zh fields are the Chinese of the English ones.
struct Erratum {
  std::string id;           ///< "E1", "E2", … (unique)
  std::string source;       ///< document and section, e.g. "003 Q5", "000 §2.2"
  std::string kind;         ///< one of erratum_kinds()
  std::string document;     ///< the document's words, quoted in Chinese
  std::string document_en;  ///< the same words in English
  std::string kvlab;        ///< the right figure or statement (English)
  std::string kvlab_zh;     ///< the same in Chinese
  std::string arithmetic;   ///< how the right figure follows (formulas)
  std::string why;          ///< one sentence: what the document's figure misses, or why it is fair
  std::string why_zh;
  std::string convention;     ///< the convention the document's figure is right under; empty if none
  std::string convention_zh;
  std::string command;      ///< a kvlab command that shows it, e.g. "kvlab kv-size"
  std::vector<std::string> flagged_by;  ///< checks whose ERRATUM line is this entry, at their defaults
};

/// The kinds an entry can be, in the order `kvlab errata` counts them: error (a wrong figure or
/// fact), units (right figure, wrong unit), convention (right under a convention the document
/// does not state), rounding (a rounding the document is entitled to), ambiguous (right for one
/// reading), imprecise (true only in part), citation (a paper's figure misquoted), notation,
/// code (a bug in the document's code).
const std::vector<std::string>& erratum_kinds();

/// True for the kinds that are not a mistake of the document: convention and rounding.
bool erratum_kind_is_fair(const std::string& kind);

/// Reads and validates the catalogue: `path`, or data_dir() + "/errata.json" when empty.
/// Throws InputError naming the file, the entry and the field (a missing or empty field, an
/// unknown kind, a duplicate id, a command that does not start with "kvlab ").
std::vector<Erratum> load_errata(const std::string& path = "");

}  // namespace kvlab

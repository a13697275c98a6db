// The cheatsheet's tables whose bodies are missing from the course text (000 §2.2, §4.1, §9.1,
// §9.3; 003 after Q7; 004 §2.5), judged cell by cell: each numeric cell `kvlab cheatsheet` prints
// against a closed form computed here from the models' shape fields and data/facts.md's independent
// per-token bytes (data/models), never from the function that built the table. kv-size's default
// run calls it.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "cheatsheet/cheatsheet.hpp"
#include "report/result.hpp"

namespace kvlab::checks {

/// Builds the cheatsheet table `name` (e.g. "000-2.2") at its defaults; the default calls
/// cheatsheet_entry(name).build({}). Unit tests pass one with a wrong cell.
using CheatTableSource = std::function<CheatTable(const std::string& name)>;

/// The cheatsheet tables kv-size judges, by name ("000-2.2", "000-4.1", "000-9.1", "000-9.3",
/// "003-Q7", "004-2.5"), each built by `source`.
std::map<std::string, CheatTable> cheatsheet_tables(const CheatTableSource& source = {});

/// Per table, one expectation "cells that differ from the closed form" (expected 0, exact count;
/// each cell within 1e-9 relative, integers exact) and, for 000 §9.3, the document's "+14 GB" and
/// "~200 MB" (E11) against the computed figures. Throws std::runtime_error when a table lacks a
/// row the closed forms expect.
std::vector<Expectation> judge_cheatsheet_tables(const std::map<std::string, CheatTable>& tables);

/// The table of cells compared, one row per cheatsheet table.
Table cheatsheet_summary(const std::map<std::string, CheatTable>& tables);

}  // namespace kvlab::checks

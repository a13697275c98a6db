// The question bank of `kvlab selftest` (selftest_bank.cpp), read by selftest.cpp only.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/rng.hpp"
#include "quiz/selftest.hpp"

namespace kvlab::selftest_detail {

/// One entry: its id, source and layer, and how to draw it. `draw` fills the question's text,
/// choices (right one first: make_selftest shuffles them) or numeric answer, explanation and
/// command; make_selftest sets id, source and layer.
struct BankEntry {
  std::string id;
  std::string source;
  SelftestLayer layer;
  std::function<SelftestQuestion(Rng&)> draw;
};

/// The bank in the documents' order: 004 §C 1–16, 004 §B 1–5, 003 review 1–10, 000 §7.
const std::vector<BankEntry>& bank();

}  // namespace kvlab::selftest_detail

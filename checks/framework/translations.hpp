// The checks' claims in Chinese, for `--lang zh`: the course is written in Chinese, and a student
// reads the headline in the documents' own terms (预填充 prefill, 解码 decode, 接受率 α, ...).
// One table for every check, kept complete by a unit test (tests/checks/translations_test.cpp).
#pragma once

#include <string>
#include <string_view>

namespace kvlab::checks {

/// The claim of check `name` in Chinese, one line, without the run's figures (those are in the
/// headline's document and kvlab fields); "" when the check has no translation.
std::string claim_zh(std::string_view name);

}  // namespace kvlab::checks

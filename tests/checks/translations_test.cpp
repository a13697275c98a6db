// checks/framework/translations: every registered check has its claim in Chinese, so that
// `--lang zh` leaves no headline untranslated.
#include <doctest/doctest.h>

#include <string>

#include "framework/check.hpp"
#include "framework/translations.hpp"

using namespace kvlab;

TEST_CASE("every check's claim has a Chinese translation") {
  for (const auto& check : checks::make_all_checks()) {
    CAPTURE(check->name());
    const std::string zh = checks::claim_zh(check->name());
    REQUIRE_FALSE(zh.empty());
    // At least one CJK ideograph (UTF-8 lead byte 0xE4..0xE9): a translation, not a copy.
    bool cjk = false;
    for (unsigned char c : zh) cjk = cjk || (c >= 0xE4 && c <= 0xE9);
    CHECK(cjk);
  }
  CHECK(checks::claim_zh("no-such-check").empty());
}

// Every registered check explains itself: `kvlab explain NAME` prints Check::derivation().
#include <doctest/doctest.h>

#include <sstream>
#include <string>

#include "framework/check.hpp"

namespace kvlab::checks::test_explain {
namespace {

TEST_CASE("explain: every check has a derivation that ends with its source, in lines under 100 columns") {
  for (const auto& c : make_all_checks()) {
    CAPTURE(c->name());
    const std::string d = c->derivation();
    REQUIRE_FALSE(d.empty());
    std::istringstream in(d);
    std::string line, last;
    while (std::getline(in, line)) {
      // Columns, not bytes: count UTF-8 lead bytes only.
      std::size_t columns = 0;
      for (unsigned char ch : line) columns += (ch & 0xC0) != 0x80;
      CHECK_MESSAGE(columns <= 100, line);
      if (!line.empty()) last = line;
    }
    // The last line cites the source: "Source: 004 §1.2", or "... — 000 §8.4; <paper>".
    const bool cites = last.find("Source") != std::string::npos || last.find("§") != std::string::npos ||
                       last.find("arXiv") != std::string::npos;
    CHECK_MESSAGE(cites, "last line: " << last);
  }
}

}  // namespace
}  // namespace kvlab::checks::test_explain

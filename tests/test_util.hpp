// Helpers shared by the unit tests.
#pragma once

#include <string>

#include <doctest/doctest.h>

#include "core/error.hpp"
#include "report/result.hpp"

namespace kvlab::test {

/// The message of the InputError `f` throws (for CHECKs on the field it names); fails the test
/// when it throws nothing or another type, and when the message is not exactly one line.
template <class F>
std::string input_error(F&& f) {
  try {
    f();
  } catch (const kvlab::InputError& e) {
    const std::string msg = e.what();
    CHECK_MESSAGE(msg.find('\n') == std::string::npos, "not one line: " << msg);
    return msg;
  } catch (const std::exception& e) {
    FAIL("expected InputError, got another exception: " << e.what());
  }
  FAIL("expected InputError, nothing was thrown");
  return {};
}

/// Whether some expectation of `r` whose quantity contains `needle` fails (a broken part's row).
inline bool failed_row(const Result& r, const std::string& needle) {
  for (const Expectation& e : r.expectations)
    if (!e.holds() && e.quantity.find(needle) != std::string::npos) return true;
  return false;
}

/// Whether the first expectation of `r` whose quantity contains `part` fails; fails the test when
/// no quantity contains it (a renamed row would otherwise make a CHECK_FALSE pass by itself).
inline bool row_fails(const Result& r, const std::string& part) {
  for (const Expectation& e : r.expectations)
    if (e.quantity.find(part) != std::string::npos) return !e.holds();
  FAIL("no expectation with '" << part << "'");
  return false;
}

}  // namespace kvlab::test

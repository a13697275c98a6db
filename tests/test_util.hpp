// Helpers shared by the unit tests.
#pragma once

#include <string>

#include <doctest/doctest.h>

#include "core/error.hpp"

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

}  // namespace kvlab::test

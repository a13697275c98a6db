// Helpers shared by the unit tests.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>

#include <doctest/doctest.h>

#include "core/error.hpp"
#include "model/config.hpp"
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

/// A byte-level model shape (vocab 256, block 128, MHA, head_dim d / n_head) for the checks that run
/// a small stand-in of the trained pair on text.
inline ModelConfig byte_config(int n_layer, int d, int n_head) {
  ModelConfig c;
  c.n_layer = n_layer;
  c.d_model = d;
  c.n_head = n_head;
  c.n_kv_head = n_head;
  c.head_dim = d / n_head;
  c.vocab_size = 256;
  c.block_size = 128;
  return c;
}

/// A directory `name` under the temporary folder holding one small fortune file (40 fortunes of
/// English-like text); returns its path.
inline std::string fortune_fixture(const std::string& name) {
  const std::string dir = (std::filesystem::temp_directory_path() / name).string();
  std::filesystem::create_directories(dir);
  std::ofstream out(dir + "/sample");
  for (int i = 0; i < 40; ++i)
    out << "Fortune number " << i << ": the quick brown fox jumps over the lazy dog, again and again.\n%\n";
  return dir;
}

}  // namespace kvlab::test

// --weights on the speculative checks: a target/draft pair from files (check_pair), its
// refusals, and the notes a check prints on a file pair. spec-exact on the trained pair:
// tests/checks/spec_exact_test.cpp.
#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "checks/spec_exact.hpp"
#include "model/weights_io.hpp"
#include "support/model_setup.hpp"
#include "test_util.hpp"

namespace check_support_model_setup_test {

namespace {

using namespace kvlab;

std::string write_model(const std::string& name, int vocab, std::uint64_t seed) {
  ModelConfig c;
  c.n_layer = 1;
  c.d_model = 16;
  c.n_head = c.n_kv_head = 2;
  c.head_dim = 8;
  c.vocab_size = vocab;
  c.block_size = 16;
  const std::string path = (std::filesystem::temp_directory_path() / ("kvlab_pair_" + name + ".safetensors")).string();
  save_gpt(MiniGPT<double>(c, seed), path, {});
  return path;
}

}  // namespace

TEST_CASE("check_pair: both files or neither; vocabularies must match, named with both files") {
  checks::RunContext ctx;
  ctx.weights = write_model("t8", 8, 1);
  const auto only_one = test::input_error([&] {
    checks::check_pair<double>(checks::small_spec_target(8), checks::small_spec_draft(8), 2, ctx, "spec-exact");
  });
  CHECK(only_one.find("--weights, --draft-weights") == 0);
  ctx.draft_weights = write_model("d9", 9, 2);
  const auto vocab = test::input_error([&] {
    checks::check_pair<double>(checks::small_spec_target(8), checks::small_spec_draft(8), 2, ctx, "spec-exact");
  });
  CHECK(vocab.find("vocab_size 8") != std::string::npos);
  CHECK(vocab.find("has 9") != std::string::npos);
  CHECK(vocab.find(ctx.draft_weights) != std::string::npos);
  ctx.draft_weights = write_model("d8", 8, 2);
  const auto pair =
      checks::check_pair<double>(checks::small_spec_target(8), checks::small_spec_draft(8), 2, ctx, "spec-exact");
  CHECK(pair.target.config().n_layer == 1);
  // spec-exact on a file pair of V = 8: the same test as on the random pair.
  checks::SpecExactOptions o;
  o.samples = 2000;
  CHECK(checks::run_spec_exact(o, ctx).passed());
}

}  // namespace check_support_model_setup_test

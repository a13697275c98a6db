// The fuzz targets' inputs, replayed with any compiler: every file under
// tests/fuzz/corpus/<target>/ and tests/fuzz/regressions/<target>/ goes through the one-input
// function the libFuzzer target uses (apps/fuzz/fuzz_entry.cpp), which asserts the contract: a
// valid spec or an InputError of one line, and exact cost figures on every accepted spec. Then one
// unit test per finding, on the library function that was fixed (docs/reliability.md lists them).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "apps/fuzz/fuzz_entry.hpp"
#include "core/error.hpp"
#include "cost/kv_cache.hpp"
#include "io/catalogue.hpp"
#include "test_util.hpp"

namespace test_fuzz_regressions {

namespace {

namespace fs = std::filesystem;
using kvlab::fuzz::Outcome;
using kvlab::test::input_error;

const fs::path kFuzzDir = fs::path(__FILE__).parent_path() / "fuzz";

/// The regular files under `dir`, sorted (an absent folder has none).
std::vector<fs::path> files_in(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file()) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

std::string bytes_of(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

struct Tally {
  std::size_t accepted = 0, rejected = 0;
};

/// Runs `entry` on every file of `dir`; a ContractViolation or any exception fails the test with
/// the file's path.
Tally replay(Outcome (*entry)(std::string_view), const fs::path& dir) {
  Tally t;
  for (const auto& file : files_in(dir)) {
    CAPTURE(file.string());
    try {
      (entry(bytes_of(file)) == Outcome::accepted ? t.accepted : t.rejected) += 1;
    } catch (const kvlab::fuzz::ContractViolation& e) {
      FAIL_CHECK("contract violation: " << std::string(e.what()));
    } catch (const std::exception& e) {
      FAIL_CHECK("exception other than InputError: " << std::string(e.what()));
    }
  }
  return t;
}

}  // namespace

TEST_CASE("fuzz corpus and regressions: config.json reader keeps its contract") {
  const Tally corpus =
      replay(kvlab::fuzz::model_config_input, kFuzzDir / "corpus" / "model_config");
  // Real configs are accepted and the broken fixtures rejected: the replay reaches both paths.
  CHECK(corpus.accepted >= 17);
  CHECK(corpus.rejected >= 10);
  // Inputs that once broke the contract (docs/reliability.md); `make fuzz` adds new ones here.
  replay(kvlab::fuzz::model_config_input, kFuzzDir / "regressions" / "model_config");
}

TEST_CASE("fuzz corpus and regressions: hardware catalogue reader keeps its contract") {
  const Tally corpus = replay(kvlab::fuzz::gpu_spec_input, kFuzzDir / "corpus" / "gpu_spec");
  CHECK(corpus.accepted >= 9);
  CHECK(corpus.rejected >= 4);
  replay(kvlab::fuzz::gpu_spec_input, kFuzzDir / "regressions" / "gpu_spec");
}

TEST_CASE("fuzz corpus and regressions: safetensors reader keeps its contract") {
  const Tally corpus = replay(kvlab::fuzz::safetensors_input, kFuzzDir / "corpus" / "safetensors");
  // Model files of tests/fuzz/corpus/safetensors/model_*.safetensors (kvlab model init, every
  // dtype) and plain tensor files are accepted; the hostile_* fixtures rejected.
  CHECK(corpus.accepted >= 5);
  CHECK(corpus.rejected >= 8);
  replay(kvlab::fuzz::safetensors_input, kFuzzDir / "regressions" / "safetensors");
}

TEST_CASE("fuzz entry: tells accepted inputs from rejected ones") {
  const char* small = R"({"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
                          "vocab_size": 10})";
  CHECK(kvlab::fuzz::model_config_input(small) == Outcome::accepted);
  CHECK(kvlab::fuzz::model_config_input(R"({"num_hidden_layers": 2})") == Outcome::rejected);
  CHECK(kvlab::fuzz::model_config_input("") == Outcome::rejected);
  CHECK(kvlab::fuzz::gpu_spec_input(R"({"memory_bytes": 1, "bandwidth_bytes_per_s": 1,
      "bf16_flops_per_s": 1e21, "fp32_flops_per_s": 1})") == Outcome::accepted);
}

// ---- findings (docs/reliability.md), one test each on the fixed library function -----------

TEST_CASE("fuzz finding: a number beyond a double is an InputError, not an internal error") {
  // nlohmann throws out_of_range.406, not parse_error, for 1e400; parse_object let it escape.
  const std::string msg = input_error([] {
    kvlab::parse_model_config(R"({"num_hidden_layers": 2, "num_parameters": 1e400})", "c.json",
                              "c");
  });
  CHECK(msg.rfind("c.json: unreadable JSON: ", 0) == 0);
  CHECK(msg.find("1e400") != std::string::npos);
  CHECK(input_error([] {
          kvlab::parse_gpu_config(R"({"memory_bytes": -1e999})", "g.json", "g");
        }).find("g.json: unreadable JSON") == 0);
}

TEST_CASE("fuzz finding: a long name is cut at a UTF-8 character boundary") {
  // 299 ASCII bytes then 2-byte "é"s: byte 300 is the first half of an "é".
  std::string name(299, 'a');
  for (int i = 0; i < 10; ++i) name += "\xc3\xa9";
  nlohmann::json j{{"name", name},      {"source", name},           {"num_hidden_layers", 2},
                   {"hidden_size", 64}, {"num_attention_heads", 2}, {"vocab_size", 10}};
  const kvlab::ModelSpec m = kvlab::parse_model_spec(j, "c.json", "c");
  CHECK(m.name == std::string(299, 'a'));
  CHECK(m.source == std::string(299, 'a'));
  CHECK_NOTHROW((void)nlohmann::json(m.name).dump());  // what the JSON writer does with it
  std::string three(298, 'a');  // "€" is 3 bytes: 298 + 3 > 300, so it goes whole
  three += "\xe2\x82\xac";
  j["name"] = three;
  CHECK(kvlab::parse_model_spec(j, "c.json", "c").name == std::string(298, 'a'));
  j["name"] = std::string(297, 'a') + "\xe2\x82\xac";  // exactly 300 bytes: kept whole
  CHECK(kvlab::parse_model_spec(j, "c.json", "c").name.size() == 300);
}

TEST_CASE("fuzz finding: the layer count is bounded, so the tensor-by-tensor cache list is") {
  nlohmann::json j{{"num_hidden_layers", 2147483648ull},
                   {"hidden_size", 64},
                   {"num_attention_heads", 1},
                   {"vocab_size", 1}};
  // 2^31 layers passed the reader and kv_cache_tensors reserved 2^32 tensors (256 GiB).
  CHECK(input_error([&] {
          kvlab::parse_model_spec(j, "c.json", "c");
        }).find("c.json: num_hidden_layers: must be an integer in [1, 65536] (got 2147483648)") ==
        0);
  j["num_hidden_layers"] = kvlab::kMaxConfigLayers;
  const kvlab::ModelSpec m = kvlab::parse_model_spec(j, "c.json", "c");
  CHECK(kvlab::kv_cache_tensors(m, kvlab::KvQuery{1, 1, kvlab::CacheDtype::bf16, {}}).size() ==
        2 * kvlab::kMaxConfigLayers);
  j.erase("num_hidden_layers");
  j["n_layer"] = kvlab::kMaxConfigLayers + 1;  // the GPT-2 alias too
  CHECK(input_error([&] { kvlab::parse_model_spec(j, "c.json", "c"); }).find("n_layer") !=
        std::string::npos);
}

TEST_CASE("fuzz finding: GPU rates below 1 are rejected, so ridge and step time stay finite") {
  // A bandwidth of 5e-324 B/s (a subnormal) gave ridge = 1e21 / 5e-324 = inf.
  const nlohmann::json good{{"memory_bytes", 1},
                            {"bandwidth_bytes_per_s", 1},
                            {"bf16_flops_per_s", 1e21},
                            {"fp32_flops_per_s", 1}};
  CHECK_NOTHROW(kvlab::parse_gpu_spec(good, "g.json", "g"));
  for (const char* field :
       {"bandwidth_bytes_per_s", "bf16_flops_per_s", "fp32_flops_per_s", "fp8_flops_per_s"}) {
    for (double v : {5e-324, 0.5}) {
      nlohmann::json j = good;
      j[field] = v;
      const std::string msg = input_error([&] { kvlab::parse_gpu_spec(j, "g.json", "g"); });
      CAPTURE(msg);
      CHECK(msg.find(std::string("g.json: ") + field + ": must be a finite number in [1, 1e21]") ==
            0);
    }
  }
}

}  // namespace test_fuzz_regressions

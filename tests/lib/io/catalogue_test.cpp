// The catalogue reader (lib/io/catalogue.*): every catalogue file loads with the aliases resolved,
// real Hugging Face configs load, and every malformed config is an InputError of one line that
// names the field.
#include <doctest/doctest.h>

#include "test_util.hpp"

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "io/data_dir.hpp"
#include "core/error.hpp"
#include "io/catalogue.hpp"

namespace io_catalogue_test {

using kvlab::test::input_error;

namespace {

using kvlab::InputError;
using kvlab::ModelSpec;
using nlohmann::json;

const std::string kFixtures =  // tests/data/configs
    (std::filesystem::path(__FILE__).parent_path().parent_path().parent_path() / "data" / "configs").string();

std::string fixture(const std::string& name) { return kFixtures + "/" + name; }


/// A minimal valid Llama-style config to break one field at a time.
json base_config() {
  return json{{"num_hidden_layers", 32}, {"hidden_size", 4096}, {"num_attention_heads", 32},
              {"num_key_value_heads", 8}, {"vocab_size", 32000}};
}

std::string spec_error(const json& j) {
  return input_error([&] { kvlab::parse_model_spec(j, "cfg.json", "cfg"); });
}

}  // namespace

TEST_CASE("catalogue: every model file loads, its name is its file stem, and aliases resolve") {
  const auto names = kvlab::model_names();
  REQUIRE(names.size() >= 17);
  for (const auto& n : names) {
    CAPTURE(n);
    const ModelSpec m = kvlab::load_model(n);
    CHECK(m.name == n);
    CHECK(m.n_head % m.n_kv_head == 0);
    CHECK(m.kv_bytes_per_token_16bit.has_value());
    CHECK(m.num_parameters.has_value());
    CHECK(!m.source.empty());
  }
  const ModelSpec gpt2 = kvlab::load_model("gpt2");  // n_layer / n_embd / n_head / n_positions
  CHECK(gpt2.n_layer == 12);
  CHECK(gpt2.d_model == 768);
  CHECK(gpt2.n_head == 12);
  CHECK(gpt2.n_kv_head == 12);
  CHECK(gpt2.head_dim == 64);
  CHECK(gpt2.max_position_embeddings == 1024u);
  CHECK(gpt2.intermediate_size == 3072u);
  CHECK(kvlab::load_model("falcon-7b").n_kv_head == 1);   // multi_query: true
  CHECK(kvlab::load_model("falcon-40b").n_kv_head == 8);  // num_kv_heads
  CHECK(kvlab::load_model("gemma-2-9b").head_dim == 256); // explicit, 16 x 256 != 3584
  CHECK(kvlab::load_model("mistral-7b").sliding_window == 4096u);
  CHECK_FALSE(kvlab::load_model("qwen2-7b").sliding_window.has_value());  // null
  const ModelSpec ds = kvlab::load_model("deepseek-v2");
  CHECK(ds.is_mla());
  CHECK(ds.kv_lora_rank == 512u);
  CHECK(ds.qk_rope_head_dim == 64u);
  CHECK_FALSE(kvlab::load_model("llama-2-7b").is_mla());
}

TEST_CASE("catalogue: unknown names list the known ones; names cannot leave the catalogue") {
  const std::string msg = input_error([] { kvlab::load_model("nosuch"); });
  CHECK(msg.find("unknown model 'nosuch'") != std::string::npos);
  CHECK(msg.find("llama-2-7b") != std::string::npos);
  CHECK(msg.find("deepseek-v2") != std::string::npos);
  CHECK(input_error([] { kvlab::load_model(".."); }).find("unknown model") != std::string::npos);
  CHECK(input_error([] { kvlab::load_model("../models/gpt2"); }).find("no such file") != std::string::npos);
  const std::string gpu = input_error([] { kvlab::load_gpu("nosuch"); });
  CHECK(gpu.find("unknown GPU 'nosuch'") != std::string::npos);
  CHECK(gpu.find("a100-80gb") != std::string::npos);
  CHECK(gpu.find("h200") != std::string::npos);
}

TEST_CASE("catalogue: GPUs load with their datasheet figures") {
  const auto names = kvlab::gpu_names();
  REQUIRE(names.size() >= 4);
  for (const auto& n : names) {
    CAPTURE(n);
    const auto g = kvlab::load_gpu(n);
    CHECK(g.name == n);
    CHECK(g.bandwidth_bytes_per_s > 0);
    CHECK(g.bf16_flops_per_s > g.fp32_flops_per_s);
  }
  const auto a100 = kvlab::load_gpu("a100-80gb");
  CHECK(a100.memory_bytes == 80'000'000'000ull);
  CHECK(a100.bandwidth_bytes_per_s == 2039e9);
  CHECK(a100.bf16_flops_per_s == 312e12);
  CHECK(a100.fp32_flops_per_s == 19.5e12);
  CHECK_FALSE(a100.fp8_flops_per_s.has_value());
  CHECK(kvlab::load_gpu("h100-sxm").fp8_flops_per_s.has_value());
}

TEST_CASE("catalogue: malformed GPU files are InputErrors naming the field") {
  const json good{{"memory_bytes", 80000000000}, {"bandwidth_bytes_per_s", 2039e9},
                  {"bf16_flops_per_s", 312e12}, {"fp32_flops_per_s", 19.5e12}};
  CHECK_NOTHROW(kvlab::parse_gpu_spec(good, "g.json", "g"));
  const auto err = [&](const char* field, const json& v) {
    json j = good;
    if (v.is_null()) j.erase(field);
    else j[field] = v;
    const std::string msg = input_error([&] { kvlab::parse_gpu_spec(j, "g.json", "g"); });
    CHECK_MESSAGE(msg.find(field) != std::string::npos, msg);
  };
  err("bandwidth_bytes_per_s", nullptr);
  err("bandwidth_bytes_per_s", "2039e9");
  err("bf16_flops_per_s", -1);
  err("fp32_flops_per_s", 0);
  err("memory_bytes", 80.5e9 + 0.5);
  err("fp8_flops_per_s", "fast");
}

TEST_CASE("config.json: real Hugging Face files load") {
  const ModelSpec l = kvlab::read_model_config(fixture("hf_llama_2_7b.json"));
  CHECK(l.name == "meta-llama/Llama-2-7b-hf");
  CHECK(l.n_layer == 32);
  CHECK(l.n_kv_head == 32);
  CHECK(l.head_dim == 128);  // 4096 / 32
  CHECK_FALSE(l.kv_bytes_per_token_16bit.has_value());
  CHECK_FALSE(l.num_parameters.has_value());

  const ModelSpec g = kvlab::read_model_config(fixture("hf_gpt2.json"));
  CHECK(g.n_layer == 12);
  CHECK(g.d_model == 768);
  CHECK(g.head_dim == 64);
  CHECK_FALSE(g.intermediate_size.has_value());  // n_inner: null

  const ModelSpec f = kvlab::read_model_config(fixture("hf_falcon_7b.json"));
  CHECK(f.n_kv_head == 1);  // multi_query without the new decoder architecture
  CHECK(f.head_dim == 64);  // 4544 / 71
  CHECK_FALSE(f.max_position_embeddings.has_value());

  const ModelSpec q = kvlab::read_model_config(fixture("hf_qwen2_7b.json"));
  CHECK(q.n_kv_head == 4);
  CHECK_FALSE(q.sliding_window.has_value());  // use_sliding_window: false

  const ModelSpec d = kvlab::read_model_config(fixture("hf_deepseek_v2.json"));
  CHECK(d.is_mla());
  CHECK(d.kv_lora_rank == 512u);
  CHECK(d.num_experts == 160u);  // DeepSeek's n_routed_experts
  CHECK(d.num_experts_per_tok == 6u);
  CHECK_FALSE(d.num_parameters_active.has_value());
  CHECK(d.is_moe());
}

TEST_CASE("catalogue: mixture-of-experts figures (num_parameters_active, experts, experts per token)") {
  const ModelSpec mx = kvlab::load_model("mixtral-8x7b");
  CHECK(mx.num_parameters == 46'700'000'000u);
  CHECK(mx.num_parameters_active == 12'880'000'000u);
  CHECK(mx.num_experts == 8u);
  CHECK(mx.num_experts_per_tok == 2u);
  CHECK(mx.is_moe());
  for (const char* n : {"deepseek-v2", "deepseek-v3"}) {  // active counts, no expert split
    CAPTURE(n);
    const ModelSpec d = kvlab::load_model(n);
    CHECK(d.num_parameters_active.has_value());
    CHECK(*d.num_parameters_active < *d.num_parameters);
    CHECK_FALSE(d.num_experts.has_value());
    CHECK(d.is_moe());
  }
  CHECK(kvlab::load_model("deepseek-v2").num_parameters_active == 21'000'000'000u);
  CHECK(kvlab::load_model("deepseek-v3").num_parameters_active == 37'000'000'000u);
  const ModelSpec l = kvlab::load_model("llama-2-7b");
  CHECK_FALSE(l.num_parameters_active.has_value());
  CHECK_FALSE(l.is_moe());

  json qwen = base_config();  // Qwen-MoE spells E num_experts; E = k is not a routed model
  qwen["num_experts"] = 4;
  qwen["num_experts_per_tok"] = 4;
  const ModelSpec q = kvlab::parse_model_spec(qwen, "c", "c");
  CHECK(q.num_experts == 4u);
  CHECK_FALSE(q.is_moe());
}

TEST_CASE("config.json: inconsistent mixture-of-experts figures name the field") {
  const auto moe = [] {
    json j = base_config();
    j["num_local_experts"] = 8;
    j["num_experts_per_tok"] = 2;
    j["num_parameters"] = 46'700'000'000ull;
    j["num_parameters_active"] = 12'880'000'000ull;
    return j;
  };
  CHECK(kvlab::parse_model_spec(moe(), "c", "c").is_moe());
  json j = moe();
  j.erase("num_local_experts");
  CHECK(spec_error(j).find("cfg.json: num_local_experts | n_routed_experts | num_experts: a mixture "
                           "of experts needs both") != std::string::npos);
  j = moe();
  j.erase("num_experts_per_tok");
  CHECK(spec_error(j).find("cfg.json: num_experts_per_tok: a mixture of experts needs both") !=
        std::string::npos);
  j = moe();
  j["num_experts_per_tok"] = 9;
  CHECK(spec_error(j).find("num_experts_per_tok: must be <= num_local_experts = 8 (got 9)") !=
        std::string::npos);
  j = moe();
  j.erase("num_local_experts");
  j["n_routed_experts"] = 1;  // the error uses the alias the file used
  CHECK(spec_error(j).find("num_experts_per_tok: must be <= n_routed_experts = 1 (got 2)") !=
        std::string::npos);
  j = moe();
  j["num_parameters_active"] = 50'000'000'000ull;
  CHECK(spec_error(j).find("num_parameters_active: must be <= num_parameters = 46700000000") !=
        std::string::npos);
  j = moe();
  j["num_parameters_active"] = 11'000'000'000ull;  // < 46.7e9 · 2 / 8 = 11.675e9: S would be < 0
  CHECK(spec_error(j).find("num_parameters_active: must be >= num_parameters × num_experts_per_tok") !=
        std::string::npos);
  j = moe();
  j["num_parameters_active"] = "12.88B";
  CHECK(spec_error(j).find("num_parameters_active: must be an integer") != std::string::npos);
  j = moe();
  j["num_experts_per_tok"] = 0;
  CHECK(spec_error(j).find("num_experts_per_tok: must be an integer in [1,") != std::string::npos);
}

TEST_CASE("config.json: Falcon's multi_query / num_kv_heads rule") {
  json j = base_config();
  j.erase("num_key_value_heads");
  j["multi_query"] = true;
  CHECK(kvlab::parse_model_spec(j, "c", "c").n_kv_head == 1);
  j["new_decoder_architecture"] = true;
  j["num_kv_heads"] = 8;
  CHECK(kvlab::parse_model_spec(j, "c", "c").n_kv_head == 8);
  // multi_query without the new decoder architecture: one K/V head whatever num_kv_heads says,
  // as transformers' FalconAttention reads a re-saved Falcon-7B config (num_kv_heads = 71).
  j["new_decoder_architecture"] = false;
  CHECK(kvlab::parse_model_spec(j, "c", "c").n_kv_head == 1);
  j["num_kv_heads"] = 0;  // still a size: validated
  CHECK(spec_error(j).find("num_kv_heads: must be an integer in [1,") != std::string::npos);
  json rw = base_config();
  rw.erase("num_key_value_heads");
  rw["n_head_kv"] = 4;
  CHECK(kvlab::parse_model_spec(rw, "c", "c").n_kv_head == 4);
  json mha = base_config();
  mha.erase("num_key_value_heads");
  CHECK(kvlab::parse_model_spec(mha, "c", "c").n_kv_head == 32);
  mha["multi_query"] = "yes";
  CHECK(spec_error(mha).find("multi_query: must be true or false") != std::string::npos);
}

TEST_CASE("config.json: each malformed field is an InputError naming it") {
  struct Case {
    const char* field;
    json value;  // null: remove the field
    const char* named;
  };
  const Case cases[] = {
      {"num_hidden_layers", nullptr, "num_hidden_layers | n_layer: missing"},
      {"hidden_size", nullptr, "hidden_size | n_embd | d_model: missing"},
      {"num_attention_heads", nullptr, "num_attention_heads | n_head: missing"},
      {"vocab_size", nullptr, "vocab_size: missing"},
      {"num_hidden_layers", "32", "num_hidden_layers: must be an integer"},
      {"num_hidden_layers", 32.0, "num_hidden_layers: must be an integer"},
      {"num_hidden_layers", 32.5, "num_hidden_layers: must be an integer"},
      {"num_hidden_layers", true, "num_hidden_layers: must be an integer"},
      {"num_hidden_layers", json::array({32}), "num_hidden_layers: must be an integer"},
      {"num_hidden_layers", -1, "num_hidden_layers: must be an integer in [1, 65536] (got -1)"},
      {"num_hidden_layers", 0, "(got 0)"},
      {"hidden_size", 2147483649ull, "hidden_size: must be an integer in [1, 2147483648]"},
      {"vocab_size", 1e30, "vocab_size: must be an integer"},
      {"num_attention_heads", 0, "num_attention_heads"},
      {"num_key_value_heads", 5, "num_key_value_heads: must divide num_attention_heads = 32 (got 5)"},
      {"num_key_value_heads", 64, "num_key_value_heads: must divide"},
      {"head_dim", "128", "head_dim: must be an integer"},
      {"head_dim", 0, "head_dim"},
      {"max_position_embeddings", -4096, "max_position_embeddings"},
      {"sliding_window", 4096.5, "sliding_window"},
      {"kv_lora_rank", 512, "qk_rope_head_dim"},
      {"num_parameters", "7B", "num_parameters"},
      {"kv_bytes_per_token_16bit", -2, "kv_bytes_per_token_16bit"},
  };
  for (const auto& c : cases) {
    json j = base_config();
    if (c.value.is_null()) j.erase(c.field);
    else j[c.field] = c.value;
    const std::string msg = spec_error(j);
    CAPTURE(msg);
    CHECK(msg.rfind("cfg.json: ", 0) == 0);
    CHECK(msg.find(c.named) != std::string::npos);
  }
  json gpt = base_config();  // the error uses the alias the file used
  gpt.erase("num_attention_heads");
  gpt["n_head"] = "12";
  CHECK(spec_error(gpt).find("n_head: must be an integer") != std::string::npos);
  json hd = base_config();  // head_dim absent and not implied
  hd["hidden_size"] = 4100;
  CHECK(spec_error(hd).find("head_dim: not given, and hidden_size = 4100 is not divisible by "
                            "num_attention_heads = 32") != std::string::npos);
  hd["head_dim"] = 128;  // an explicit head_dim is taken as given (gemma-2: 16 x 256 != 3584)
  CHECK(kvlab::parse_model_spec(hd, "c", "c").head_dim == 128);
  CHECK(spec_error(json::array({1, 2})).find("must be a JSON object") != std::string::npos);
}

TEST_CASE("config.json: unreadable, non-JSON and odd files are one-line InputErrors") {
  CHECK(input_error([] { kvlab::read_model_config("/nonexistent/config.json"); }).find("no such file") !=
        std::string::npos);
  CHECK(input_error([] { kvlab::read_model_config(kFixtures); }).find("is a directory") != std::string::npos);
  CHECK(input_error([] { kvlab::read_model_config("/dev/null"); }).find("not a regular file") !=
        std::string::npos);
  const std::string malformed = input_error([] { kvlab::read_model_config(fixture("malformed.json")); });
  CHECK(malformed.find("not valid JSON") != std::string::npos);
  CHECK(malformed.find("line 3, column 39") != std::string::npos);
  const std::string random = input_error([] { kvlab::read_model_config(fixture("random_bytes.json")); });
  CHECK(random.find("not valid JSON") != std::string::npos);
  for (unsigned char ch : random) CHECK((ch >= 0x20 && ch < 0x7f));  // printable ASCII only
  CHECK(input_error([] { kvlab::read_model_config(fixture("not_object.json")); }).find("JSON object") !=
        std::string::npos);

  const auto dir = std::filesystem::temp_directory_path() / "kvlab_test_catalogue";
  std::filesystem::create_directories(dir);
  const auto empty = dir / "empty.json";
  std::ofstream(empty).close();
  CHECK(input_error([&] { kvlab::read_model_config(empty.string()); }).find("not valid JSON") !=
        std::string::npos);
  const auto big = dir / "big.json";
  std::ofstream(big).close();
  std::filesystem::resize_file(big, 17u << 20);  // sparse: no 17 MiB written
  CHECK(input_error([&] { kvlab::read_model_config(big.string()); }).find("too large") != std::string::npos);
  const auto weird = dir / "a\nb.json";  // a newline in the path must not break the line
  CHECK(input_error([&] { kvlab::read_model_config(weird.string()); }).find("a?b.json") != std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("config.json: each fixture of tests/data/configs fails on the field it breaks") {
  const std::pair<const char*, const char*> cases[] = {
      {"missing_layers.json", "num_hidden_layers"},   {"string_heads.json", "num_attention_heads"},
      {"float_layers.json", "num_hidden_layers"},     {"negative_layers.json", "num_hidden_layers"},
      {"zero_heads.json", "num_attention_heads"},     {"huge_vocab.json", "vocab_size"},
      {"kv_not_dividing.json", "num_key_value_heads"}, {"head_dim_inconsistent.json", "head_dim"},
  };
  for (const auto& c : cases) {
    const std::string file = c.first, field = c.second;  // clang 14 cannot capture a structured binding
    const std::string msg = input_error([&] { kvlab::read_model_config(fixture(file)); });
    CAPTURE(msg);
    CHECK(msg.find(field) != std::string::npos);
    CHECK(msg.find(file) != std::string::npos);
  }
}

}  // namespace io_catalogue_test

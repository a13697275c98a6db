// The layer-group model (lib/cost/layers.*) and the config rules behind it (lib/io/catalogue.cpp,
// read_layer_layout): for every real config.json in tests/data/configs, kv-size's total at contexts
// 4,096 and 32,768 in bf16 and fp8 equals a hand calculation written here; every layout field the
// reader knows is interpreted (a test below) or named in a warning (a test below); bad layouts are
// one-line InputErrors naming the field.
#include <doctest/doctest.h>

#include "test_util.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "cost/kv_cache.hpp"
#include "cost/layers.hpp"
#include "io/catalogue.hpp"
#include "kv_size.hpp"
#include "report/writers.hpp"

namespace cost_layers_test {

using kvlab::test::input_error;

namespace {

using namespace kvlab;
using nlohmann::json;
using u64 = std::uint64_t;

const std::string kFixtures =  // tests/data/configs
    (std::filesystem::path(__FILE__).parent_path().parent_path().parent_path() / "data" / "configs").string();

std::string fixture(const std::string& name) { return kFixtures + "/" + name; }

u64 min(u64 a, u64 b) { return a < b ? a : b; }

/// Hand calculations: bytes of the KV cache at context n, b bytes per element, batch 1. Each is
/// the model's layers counted by hand from its config.json (comments: how).
const std::map<std::string, std::function<u64(u64, u64)>>& hand_totals() {
  static const std::map<std::string, std::function<u64(u64, u64)>> t = {
      // Plain decoders: 2 · L · n_kv · head_dim · n · b.
      {"real_meta_llama_3_1_8b.json", [](u64 n, u64 b) { return 2 * 32 * 8 * 128 * n * b; }},
      {"real_meta_llama_3_2_3b.json", [](u64 n, u64 b) { return 2 * 28 * 8 * 128 * n * b; }},
      {"real_meta_llama_3_1_405b.json", [](u64 n, u64 b) { return 2 * 126 * 16 * 128 * n * b; }},
      {"real_llama_2_13b_ft.json", [](u64 n, u64 b) { return 2 * 40 * 40 * 128 * n * b; }},
      // Qwen2.5: use_sliding_window false, so sliding_window (= max context) applies nowhere.
      {"real_qwen2_5_3b.json", [](u64 n, u64 b) { return 2 * 36 * 2 * 128 * n * b; }},
      {"real_qwen2_5_7b.json", [](u64 n, u64 b) { return 2 * 28 * 4 * 128 * n * b; }},
      {"real_qwen2_5_14b.json", [](u64 n, u64 b) { return 2 * 48 * 8 * 128 * n * b; }},
      {"real_qwen2_5_32b.json", [](u64 n, u64 b) { return 2 * 64 * 8 * 128 * n * b; }},
      {"real_qwen3_4b.json", [](u64 n, u64 b) { return 2 * 36 * 8 * 128 * n * b; }},
      {"real_qwen3_8b.json", [](u64 n, u64 b) { return 2 * 36 * 8 * 128 * n * b; }},
      {"real_qwen3_14b.json", [](u64 n, u64 b) { return 2 * 40 * 8 * 128 * n * b; }},
      {"real_qwen3_32b.json", [](u64 n, u64 b) { return 2 * 64 * 8 * 128 * n * b; }},
      {"real_qwen3_30b_a3b.json", [](u64 n, u64 b) { return 2 * 48 * 4 * 128 * n * b; }},
      // Gemma 1 2B: MQA, head_dim 256.
      {"real_gemma_2b_it.json", [](u64 n, u64 b) { return 2 * 18 * 1 * 256 * n * b; }},
      // Falcon-7B re-saved: multi_query wins over num_kv_heads = 71; head_dim 4544 / 71 = 64.
      {"real_falcon_7b_resaved.json", [](u64 n, u64 b) { return 2 * 32 * 1 * 64 * n * b; }},
      // SantaCoder: attention_head_type multiquery, head_dim 2048 / 16 = 128.
      {"real_santacoder.json", [](u64 n, u64 b) { return 2 * 24 * 1 * 128 * n * b; }},
      // StarCoder (gpt_bigcode): multi_query, head_dim 6144 / 48 = 128.
      {"real_starcoder_15b.json", [](u64 n, u64 b) { return 2 * 40 * 1 * 128 * n * b; }},
      // One window on every layer: min(n, W) positions.
      {"real_mistral_7b_v0_1_ft.json",
       [](u64 n, u64 b) { return 2 * 32 * 8 * 128 * min(n, 4096) * b; }},
      {"real_tinymistral_248m.json",  // head_dim 1024 / 32 = 32
       [](u64 n, u64 b) { return 2 * 12 * 8 * 32 * min(n, 1024) * b; }},
      {"real_starcoder2_3b.json",  // head_dim 3072 / 24 = 128
       [](u64 n, u64 b) { return 2 * 30 * 2 * 128 * min(n, 4096) * b; }},
      {"real_starcoder2_7b.json",  // head_dim 4608 / 36 = 128
       [](u64 n, u64 b) { return 2 * 32 * 4 * 128 * min(n, 4096) * b; }},
      {"real_phi3_mini_4k_instruct.json",  // head_dim 3072 / 32 = 96, window 2047
       [](u64 n, u64 b) { return 2 * 32 * 32 * 96 * min(n, 2047) * b; }},
      // gpt-oss-20b: layer_types, 12 sliding (128) and 12 full; 8 K/V heads × 64.
      {"real_gpt_oss_20b.json",
       [](u64 n, u64 b) { return 2 * 8 * 64 * b * (12 * min(n, 128) + 12 * n); }},
      // Gemma 2 9B: even layers slide (4096), odd layers full: 21 + 21; 8 × 256.
      {"real_gemma_2_9b_it.json",
       [](u64 n, u64 b) { return 2 * 8 * 256 * b * (21 * min(n, 4096) + 21 * n); }},
      // Gemma 3 4B: 34 layers, full where (i+1) % 6 == 0 (5, 11, 17, 23, 29): 5 full, 29 sliding
      // (1024); heads from Gemma3TextConfig's defaults: 4 K/V × 256.
      {"real_gemma_3_4b_it.json",
       [](u64 n, u64 b) { return 2 * 4 * 256 * b * (29 * min(n, 1024) + 5 * n); }},
      // Gemma 3 12B (minimal text_config): 48 layers, 8 full, 40 sliding; 8 K/V × 256 (default).
      {"real_gemma_3_12b_sd.json",
       [](u64 n, u64 b) { return 2 * 8 * 256 * b * (40 * min(n, 1024) + 8 * n); }},
      // Gemma 3 270M: layer_types 15 sliding (512) + 3 full; 1 K/V × 256.
      {"real_gemma_3_270m_ft.json",
       [](u64 n, u64 b) { return 2 * 1 * 256 * b * (15 * min(n, 512) + 3 * n); }},
      // Jamba v0.1: attention where i % 8 == 4 (4, 12, 20, 28): 4 layers; 8 × 4096/32.
      {"real_jamba_v0_1.json", [](u64 n, u64 b) { return 2 * 4 * 8 * 128 * n * b; }},
      // Jamba 900M: attention where i % 4 == 2 (2, 6, 10): 3 layers; 8 × 1024/32.
      {"real_jamba_900m.json", [](u64 n, u64 b) { return 2 * 3 * 8 * 32 * n * b; }},
      // Qwen3-Next tiny: layer_types, full at 3 and 7; 2 × 128.
      {"real_qwen3_next_tiny_test.json", [](u64 n, u64 b) { return 2 * 2 * 2 * 128 * n * b; }},
      // Mamba: no attention, nothing per token.
      {"real_mamba_130m.json", [](u64, u64) { return u64{0}; }},
      {"real_mamba_130m_qbert.json", [](u64, u64) { return u64{0}; }},
      // Reduced fixtures with the layouts of Nemotron-H, Llama 4 Scout and Qwen3-Next-80B.
      // Nemotron-H 8B: 4 '*' in the 52-character pattern; 8 × 128.
      {"hf_nemotron_h_8b.json", [](u64 n, u64 b) { return 2 * 4 * 8 * 128 * n * b; }},
      // Llama 4 Scout: 48 layers, NoPE (full) where (i+1) % 4 == 0: 12; 36 chunked (8192); 8 × 128.
      {"hf_llama4_scout.json",
       [](u64 n, u64 b) { return 2 * 8 * 128 * b * (36 * min(n, 8192) + 12 * n); }},
      // Qwen3-Next-80B: full where (i+1) % 4 == 0: 12 of 48; 2 × 256.
      {"hf_qwen3_next_80b.json", [](u64 n, u64 b) { return 2 * 12 * 2 * 256 * n * b; }},
      {"hf_llama_2_7b.json", [](u64 n, u64 b) { return 2 * 32 * 32 * 128 * n * b; }},
      {"hf_gpt2.json", [](u64 n, u64 b) { return 2 * 12 * 12 * 64 * n * b; }},
      {"hf_falcon_7b.json", [](u64 n, u64 b) { return 2 * 32 * 1 * 64 * n * b; }},
      {"hf_qwen2_7b.json", [](u64 n, u64 b) { return 2 * 28 * 4 * 128 * n * b; }},
      // DeepSeek-V2: MLA, 60 · (512 + 64), no factor 2.
      {"hf_deepseek_v2.json", [](u64 n, u64 b) { return 60 * (512 + 64) * n * b; }},
  };
  return t;
}

ModelSpec spec(const json& j) { return parse_model_spec(j, "cfg.json", "cfg"); }

std::string spec_error(const json& j) {
  return input_error([&] { parse_model_spec(j, "cfg.json", "cfg"); });
}

u64 total(const ModelSpec& m, u64 ctx, CacheDtype d = CacheDtype::bf16) {
  return kv_cache_size(m, KvQuery{1, ctx, d, std::nullopt}).total_bytes;
}

/// The layer kinds of `m`, one letter per layer: F full, S sliding, C chunked, M mla, - none.
std::string kinds(const ModelSpec& m) {
  std::string s(m.n_layer, '?');
  for (const auto& g : layer_groups(m))
    for (u64 i : g.layers)
      s[i] = g.kind == LayerKind::full      ? 'F'
             : g.kind == LayerKind::sliding ? 'S'
             : g.kind == LayerKind::chunked ? 'C'
             : g.kind == LayerKind::mla     ? 'M'
                                            : '-';
  return s;
}

json llama() {
  return json{{"num_hidden_layers", 8}, {"hidden_size", 512}, {"num_attention_heads", 8},
              {"num_key_value_heads", 2}, {"vocab_size", 1000}};
}

}  // namespace

TEST_CASE("layer groups: every config's KV total at 4,096 and 32,768 equals the hand calculation") {
  std::set<std::string> on_disk;
  for (const auto& e : std::filesystem::directory_iterator(kFixtures)) {
    const std::string f = e.path().filename().string();
    if (f.rfind("real_", 0) == 0 && e.path().extension() == ".json") on_disk.insert(f);
  }
  CHECK(on_disk.size() >= 30);
  for (const auto& f : on_disk) {
    CAPTURE(f);
    CHECK(hand_totals().count(f) == 1);  // a new real config needs its hand calculation here
  }
  for (const auto& [file, hand] : hand_totals()) {
    const std::string name = file;  // clang 14 cannot capture a structured binding
    CAPTURE(name);
    const ModelSpec m = read_model_config(fixture(name));
    CHECK(m.warnings.empty());
    for (u64 n : {u64{4096}, u64{32768}}) {
      CAPTURE(n);
      CHECK(total(m, n, CacheDtype::bf16) == hand(n, 2));
      CHECK(total(m, n, CacheDtype::fp8) == hand(n, 1));
      // The second route, tensor by tensor from the layer list, agrees.
      CHECK(count_elements(kv_cache_tensors(m, KvQuery{1, n, CacheDtype::fp8, {}})) == hand(n, 1));
    }
  }
}

TEST_CASE("layer groups: gpt-oss-20b is 12 sliding-128 layers and 12 full ones; the if-full figure") {
  const ModelSpec m = read_model_config(fixture("real_gpt_oss_20b.json"));
  const auto groups = layer_groups(m);
  REQUIRE(groups.size() == 2);
  CHECK(groups[0].kind == LayerKind::sliding);
  CHECK(groups[0].span == 128);
  CHECK(groups[0].count == 12);
  CHECK(groups[0].n_kv_head == 8);
  CHECK(groups[0].head_dim == 64);
  CHECK(layer_list_text(groups[0].layers) == "0, 2, ..., 22 (every 2)");
  CHECK(groups[1].kind == LayerKind::full);
  CHECK(layer_list_text(groups[1].layers) == "1, 3, ..., 23 (every 2)");
  CHECK(positions_held(groups[0], 131072) == 128);
  CHECK(positions_held(groups[1], 131072) == 131072);
  const KvCacheSize s = kv_cache_size(m, KvQuery{1, 131072, CacheDtype::bf16, {}});
  CHECK(s.bytes_per_token == 2.0 * 24 * 8 * 64 * 2);  // every layer caching: the per-token figure
  CHECK(s.total_bytes_if_all_full == u64{2} * 24 * 8 * 64 * 131072 * 2);
  CHECK(s.total_bytes == u64{2} * 8 * 64 * 2 * (12 * 128 + 12 * 131072));
  CHECK(layer_list_text({0, 1, 2, 3, 5, 7, 8}) == "0-3, 5, 7-8");
  CHECK(layer_list_text({4}) == "4");
}

TEST_CASE("config rules: each layout field is interpreted as transformers does") {
  // layer_types (GptOssConfig, Qwen3NextConfig, ...), with sliding_window and attention_chunk_size.
  json j = llama();
  j["num_hidden_layers"] = 4;
  j["sliding_window"] = 16;
  j["attention_chunk_size"] = 32;
  j["layer_types"] = {"sliding_attention", "full_attention", "chunked_attention", "linear_attention"};
  CHECK(kinds(spec(j)) == "SFC-");
  // Gemma 2's alternation (Gemma2Config) and the Gemma 3 / Cohere2 pattern, either spelling.
  json g2 = llama();
  g2["model_type"] = "gemma2";
  g2["sliding_window"] = 16;
  CHECK(kinds(spec(g2)) == "SFSFSFSF");
  json g3 = llama();
  g3["model_type"] = "gemma3_text";
  g3["sliding_window"] = 16;
  CHECK(kinds(spec(g3)) == "SSSSSFSS");  // default pattern 6
  g3["sliding_window_pattern"] = 4;
  CHECK(kinds(spec(g3)) == "SSSFSSSF");
  g3.erase("sliding_window_pattern");
  g3["_sliding_window_pattern"] = 2;
  CHECK(kinds(spec(g3)) == "SFSFSFSF");
  // use_sliding_window with max_window_layers (Qwen2Config): layers from max_window_layers on slide.
  json q = llama();
  q["use_sliding_window"] = true;
  q["sliding_window"] = 16;
  q["max_window_layers"] = 5;
  CHECK(kinds(spec(q)) == "FFFFFSSS");
  q["use_sliding_window"] = false;
  CHECK(kinds(spec(q)) == "FFFFFFFF");
  // attention_chunk_size with the NoPE layers (Llama4TextConfig): interval or explicit list.
  json l4 = llama();
  l4["model_type"] = "llama4_text";
  l4["attention_chunk_size"] = 32;
  CHECK(kinds(spec(l4)) == "CCCFCCCF");
  l4["no_rope_layer_interval"] = 2;
  CHECK(kinds(spec(l4)) == "CFCFCFCF");
  l4["no_rope_layers"] = {1, 1, 0, 1, 1, 1, 1, 0};
  CHECK(kinds(spec(l4)) == "CCFCCCCF");
  // attn_layer_period / attn_layer_offset (JambaConfig).
  json jb = llama();
  jb["model_type"] = "jamba";
  jb["attn_layer_period"] = 4;
  jb["attn_layer_offset"] = 1;
  CHECK(kinds(spec(jb)) == "-F---F--");
  // full_attention_interval (Qwen3NextConfig).
  json qn = llama();
  qn["model_type"] = "qwen3_next";
  qn["full_attention_interval"] = 2;
  CHECK(kinds(spec(qn)) == "-F-F-F-F");
  // hybrid_override_pattern (NemotronHConfig) and layers_block_type.
  json nh = llama();
  nh["hybrid_override_pattern"] = "M-*EM-*-";
  CHECK(kinds(spec(nh)) == "--F---F-");
  json lb = llama();
  lb["num_hidden_layers"] = 3;
  lb["layers_block_type"] = {"mamba", "attention", "mlp"};
  CHECK(kinds(spec(lb)) == "-F-");
  // One window on every layer (MistralConfig, Starcoder2Config, Phi3Config).
  json mi = llama();
  mi["sliding_window"] = 16;
  CHECK(kinds(spec(mi)) == "SSSSSSSS");
  // MistralConfig's default window when the config leaves it out; null means none.
  json md = llama();
  md["model_type"] = "mistral";
  CHECK(kinds(spec(md)) == "SSSSSSSS");
  md["sliding_window"] = nullptr;
  CHECK(kinds(spec(md)) == "FFFFFFFF");
  // Attention-free model_types: no heads needed, 0 bytes per token.
  const ModelSpec mamba = spec(json{{"model_type", "mamba"}, {"hidden_size", 64}, {"num_hidden_layers", 2},
                                    {"vocab_size", 100}, {"state_size", 16}, {"conv_kernel", 4}, {"expand", 2}});
  CHECK(kinds(mamba) == "--");
  CHECK(total(mamba, 4096) == 0);
  CHECK(mamba.state_elements_per_layer == u64{128 * (4 + 16)});
  // mamba_ssm's own names (d_model, n_layer, d_conv, d_state, d_inner): no default shadows them.
  const ModelSpec qb = read_model_config(fixture("real_mamba_130m_qbert.json"));
  CHECK(qb.n_layer == 24);
  CHECK(qb.d_model == 768);
  CHECK(qb.state_elements_per_layer == u64{1536 * (4 + 16)});
  // MLA: every attention layer holds the latent and the RoPE key.
  const ModelSpec ds = read_model_config(fixture("hf_deepseek_v2.json"));
  CHECK(kinds(ds) == std::string(60, 'M'));
}

TEST_CASE("config rules: text_config, model_type defaults, Falcon and gpt_bigcode heads, literals") {
  // A nested text model (Gemma3Config) with only three fields: the rest from Gemma3TextConfig.
  const ModelSpec g = read_model_config(fixture("real_gemma_3_4b_it.json"));
  CHECK(g.model_type == "gemma3_text");
  CHECK(g.n_layer == 34);
  CHECK(g.n_head == 8);
  CHECK(g.n_kv_head == 4);
  CHECK(g.head_dim == 256);
  CHECK(g.vocab_size == 262208);
  // Falcon: multi_query without the new decoder architecture is one K/V head (num_kv_heads 71 or not).
  CHECK(read_model_config(fixture("real_falcon_7b_resaved.json")).n_kv_head == 1);
  json f = llama();
  f.erase("num_key_value_heads");
  f["model_type"] = "falcon";
  f["multi_query"] = true;
  f["new_decoder_architecture"] = true;
  f["num_kv_heads"] = 4;
  CHECK(spec(f).n_kv_head == 4);
  // gpt_bigcode: multi_query defaults to true (GPTBigCodeConfig); false means MHA.
  json bc = llama();
  bc.erase("num_key_value_heads");
  bc["model_type"] = "gpt_bigcode";
  CHECK(spec(bc).n_kv_head == 1);
  bc["multi_query"] = false;
  CHECK(spec(bc).n_kv_head == 8);
  // SantaCoder's attention_head_type.
  json sc = llama();
  sc.erase("num_key_value_heads");
  sc["attention_head_type"] = "multiquery";
  CHECK(spec(sc).n_kv_head == 1);
  sc["attention_head_type"] = "multihead";
  CHECK(spec(sc).n_kv_head == 8);
  // Python's Infinity / NaN literals outside strings read as Python reads them; inside strings untouched.
  const ModelSpec nh = read_model_config(fixture("hf_nemotron_h_8b.json"));
  CHECK(nh.n_layer == 52);
  const std::string text =
      R"({"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "vocab_size": 10,)"
      R"( "time_step_limit": [0.0, Infinity], "x": -Infinity, "y": NaN, "name": "NaN Infinity"})";
  const ModelSpec lit = parse_model_config(text, "lit.json", "lit");
  CHECK(lit.name == "NaN Infinity");
  CHECK(lit.n_layer == 2);
}

TEST_CASE("config rules: layout kvlab does not interpret is named in a warning, never silently") {
  const char* fields[] = {"attention_types", "attention_layers", "window_size", "attention_window",
                          "block_configs", "num_kv_shared_layers", "global_attn_every_n_layers",
                          "attn_type_list", "layer_group_size", "num_key_value_heads_per_layer",
                          "swa_layers", "local_attention"};
  for (const char* f : fields) {
    CAPTURE(f);
    json j = llama();
    j[f] = 4;
    const ModelSpec m = spec(j);
    REQUIRE(m.warnings.size() == 1);
    CHECK(m.warnings[0].find(f) == 0);
  }
  json u = llama();
  u["model_type"] = "zamba2";
  REQUIRE(spec(u).warnings.size() == 1);
  CHECK(spec(u).warnings[0].find("model_type 'zamba2'") == 0);
  json lt = llama();
  lt["num_hidden_layers"] = 2;
  lt["layer_types"] = {"full_attention", "hybrid"};
  REQUIRE(spec(lt).warnings.size() == 1);
  CHECK(spec(lt).warnings[0].find("layer_types[1]") == 0);

  // kv-size on such a config: warnings in the result and in the JSON, and no PASS.
  const std::string path = (std::filesystem::temp_directory_path() / "kvlab_test_warn_config.json").string();
  {
    json w = llama();
    w["model_type"] = "gpt_neo";
    w["attention_types"] = json::array({json::array({json::array({"global", "local"}), 4})});
    std::ofstream(path) << w.dump();
  }
  checks::KvSizeOptions o;
  o.config = path;
  const Result r = checks::run_kv_size(o, checks::RunContext{});
  CHECK_FALSE(r.passed());
  REQUIRE(r.warnings.has_value());
  CHECK(r.warnings->size() == 2);
  const json out = to_json(r);
  CHECK(out["warnings"].size() == 2);
  CHECK(out.contains("layer_groups"));
  std::filesystem::remove(path);

  // A plain config: an empty warnings array, and PASS.
  checks::KvSizeOptions p;
  p.config = fixture("real_qwen3_8b.json");
  const Result rp = checks::run_kv_size(p, checks::RunContext{});
  CHECK(rp.passed());
  CHECK(to_json(rp)["warnings"] == json::array());
}

TEST_CASE("config rules: a layout that cannot be sized is one line naming the field") {
  json j = llama();
  j["layer_types"] = {"full_attention"};
  CHECK(spec_error(j).find("cfg.json: layer_types: must be a list of num_hidden_layers = 8") == 0);
  j["layer_types"] = json::array();
  for (int i = 0; i < 8; ++i) j["layer_types"].push_back("sliding_attention");
  CHECK(spec_error(j).find("cfg.json: sliding_window: missing, but layer_types names sliding") == 0);
  j["layer_types"][0] = "chunked_attention";
  j["sliding_window"] = 4;
  CHECK(spec_error(j).find("cfg.json: attention_chunk_size: missing") == 0);
  json h = llama();
  h["hybrid_override_pattern"] = "M-*";
  CHECK(spec_error(h).find("cfg.json: hybrid_override_pattern: must be a string of num_hidden_layers = 8") == 0);
  h["hybrid_override_pattern"] = "M-*EM-*x";
  CHECK(spec_error(h).find("cfg.json: hybrid_override_pattern: character 7 is 'x'") == 0);
  json jb = llama();
  jb["model_type"] = "jamba";
  jb["attn_layer_period"] = 4;
  jb["attn_layer_offset"] = 4;
  CHECK(spec_error(jb).find("cfg.json: attn_layer_offset: must be an integer in [0, 3]") == 0);
  json a = llama();
  a["attention_head_type"] = "grouped";
  CHECK(spec_error(a).find("cfg.json: attention_head_type: must be") == 0);
  json t = llama();
  t["text_config"] = 3;
  CHECK(spec_error(t).find("cfg.json: text_config: must be a JSON object") == 0);
  // A literal in a field kvlab sizes with is refused by name.
  const std::string text =
      R"({"num_hidden_layers": Infinity, "hidden_size": 64, "num_attention_heads": 4, "vocab_size": 10})";
  CHECK(input_error([&] { parse_model_config(text, "inf.json", "inf"); })
            .find("inf.json: num_hidden_layers: must be an integer in [1, 65536] (got \"Infinity\" (a string))") == 0);
  json ns = llama();
  ns["num_hidden_layers"] = 2;
  ns["no_rope_layers"] = {1};
  ns["model_type"] = "llama4_text";
  ns["attention_chunk_size"] = 8;
  CHECK(spec_error(ns).find("cfg.json: no_rope_layers: must be a list of num_hidden_layers = 2") == 0);
}

}  // namespace cost_layers_test

// safetensors weights I/O (lib/io/safetensors.hpp, lib/model/weights_io.hpp): round trips in every
// dtype, the hostile files the reader must refuse with one line naming the file and the problem,
// and MiniGPT through a file giving the same logits.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "io/safetensors.hpp"
#include "model/gpt.hpp"
#include "model/weights_io.hpp"
#include "quant/minifloat.hpp"
#include "test_util.hpp"

namespace model_weights_io_test {

namespace {

using kvlab::SafeTensor;
using kvlab::test::input_error;
using Bytes = std::vector<unsigned char>;

/// A file from a header text and raw data bytes (the length prefix computed, or forced).
Bytes raw_file(const std::string& header, const Bytes& data, std::uint64_t forced_len = 0) {
  Bytes out;
  const std::uint64_t n = forced_len ? forced_len : header.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<unsigned char>(n >> (8 * i)));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

/// The header length a file starts with.
std::uint64_t read_u64_le_size(const Bytes& b) {
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | b[static_cast<std::size_t>(i)];
  return n;
}

Bytes f32_bytes(std::initializer_list<float> xs) {
  Bytes out;
  for (float x : xs) {
    std::uint32_t u;
    std::memcpy(&u, &x, 4);
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<unsigned char>(u >> (8 * i)));
  }
  return out;
}

std::string parse_error(const Bytes& b) {
  return input_error([&] { kvlab::parse_safetensors(b, "m.safetensors"); });
}

kvlab::ModelConfig small_config() {
  kvlab::ModelConfig c;
  c.n_layer = 2;
  c.d_model = 16;
  c.n_head = 4;
  c.n_kv_head = 2;
  c.head_dim = 4;
  c.vocab_size = 11;
  c.block_size = 8;
  return c;
}

std::string tmp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("kvlab_test_weights_" + name)).string();
}

}  // namespace

TEST_CASE("safetensors: round trip in F64, F32, BF16 and F16, metadata kept") {
  const std::vector<double> xs = {0.0, -1.5, 3.140625, 1e-3, -65504.0, 0.1};
  for (const char* dt : {"F64", "F32", "BF16", "F16"}) {
    CAPTURE(dt);
    std::vector<SafeTensor> ts = {{"a.weight", dt, {2, 3}, xs}, {"b", dt, {}, {2.5}}, {"empty", dt, {0, 4}, {}}};
    const Bytes b = kvlab::encode_safetensors(ts, {{"format", "pt"}, {"k", "v"}});
    CHECK(read_u64_le_size(b) % 8 == 0);
    const auto f = kvlab::parse_safetensors(b, "x");
    CHECK(f.metadata.at("k") == "v");
    REQUIRE(f.tensors.size() == 3);
    const SafeTensor* a = f.find("a.weight");
    REQUIRE(a != nullptr);
    CHECK(a->shape == std::vector<std::int64_t>{2, 3});
    CHECK(a->dtype == dt);
    for (std::size_t i = 0; i < xs.size(); ++i) {
      double expect = xs[i];
      if (std::string(dt) == "F32") expect = static_cast<float>(xs[i]);
      if (std::string(dt) == "F16") expect = kvlab::minifloat_round(xs[i], kvlab::MiniFloat::fp16);
      if (std::string(dt) == "BF16") {
        // 8 significant bits: relative error at most 2^-9 (0.1 rounds to 0.10009765625).
        CHECK(std::fabs(a->values[i] - xs[i]) <= std::ldexp(std::fabs(xs[i]), -9));
        continue;
      }
      CHECK(a->values[i] == expect);
    }
    CHECK(f.find("b")->values == std::vector<double>{2.5});
    CHECK(f.find("empty")->numel() == 0);
  }
}

TEST_CASE("safetensors: BF16 rounds to nearest even, exactly") {
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even gives 1; 1 + 3·2^-8 gives 1 + 2^-6.
  const Bytes b = kvlab::encode_safetensors(
      {{"t", "BF16", {3}, {1.0 + std::ldexp(1.0, -8), 1.0 + 3 * std::ldexp(1.0, -8), -std::ldexp(1.0, -130)}}}, {});
  const auto v = kvlab::parse_safetensors(b, "x").tensors[0].values;
  CHECK(v[0] == 1.0);
  CHECK(v[1] == 1.0 + std::ldexp(1.0, -6));
  CHECK(v[2] == -std::ldexp(1.0, -130));  // a subnormal of float32, representable in BF16
}

TEST_CASE("safetensors: a file written by the reference layout (no padding, F32) is read") {
  // {"t":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}} as the Python package writes it.
  const std::string h = R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  const auto f = kvlab::parse_safetensors(raw_file(h, f32_bytes({1.5f, -2.0f})), "x");
  CHECK(f.tensors[0].values == std::vector<double>{1.5, -2.0});
  CHECK(f.metadata.empty());
}

TEST_CASE("safetensors: hostile files are refused with one line naming the file and the problem") {
  const std::string good = R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  const Bytes data = f32_bytes({1.0f, 2.0f});
  CHECK_NOTHROW(kvlab::parse_safetensors(raw_file(good, data), "m"));

  SUBCASE("truncated") {
    CHECK(parse_error(Bytes{1, 2, 3}).find("m.safetensors: 3 bytes, too short") == 0);
    Bytes b = raw_file(good, data);
    b.resize(b.size() - 3);  // the data cut short
    CHECK(parse_error(b).find("runs past the data area") != std::string::npos);
    b = raw_file(good, data);
    b.resize(20);  // the header cut short
    CHECK(parse_error(b).find("runs past the end of the file") != std::string::npos);
  }
  SUBCASE("header length huge") {
    CHECK(parse_error(raw_file(good, data, std::uint64_t{1} << 62)).find("exceeds the limit") != std::string::npos);
    CHECK(parse_error(raw_file(good, data, ~std::uint64_t{0})).find("exceeds the limit") != std::string::npos);
  }
  SUBCASE("malformed JSON, not an object") {
    CHECK(parse_error(raw_file(R"({"t":{)", {})).find("header is not valid JSON") != std::string::npos);
    CHECK(parse_error(raw_file("[1, 2]", {})).find("header must be a JSON object") != std::string::npos);
    CHECK(parse_error(raw_file("{\"t\xff\":1}", {})).find("not valid JSON") != std::string::npos);
  }
  SUBCASE("offsets out of range, overlapping, gaps, reversed") {
    CHECK(parse_error(raw_file(R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})", data))
              .find("gap of 8 bytes") != std::string::npos);
    CHECK(parse_error(raw_file(R"({"t":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", data))
              .find("runs past the data area of 8 bytes") != std::string::npos);
    const std::string overlap =
        R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})";
    CHECK(parse_error(raw_file(overlap, data)).find("overlaps 'a'") != std::string::npos);
    CHECK(parse_error(raw_file(R"({"t":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}})", data))
              .find("end before they begin") != std::string::npos);
    CHECK(parse_error(raw_file(R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[-1,7]}})", data))
              .find("non-negative integers") != std::string::npos);
    CHECK(parse_error(raw_file(R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", data))
              .find("[BEGIN, END]") != std::string::npos);
  }
  SUBCASE("unknown dtype") {
    const std::string msg = parse_error(raw_file(R"({"t":{"dtype":"I8","shape":[8],"data_offsets":[0,8]}})", data));
    CHECK(msg.find("m.safetensors: tensor 't': dtype 'I8': not one kvlab reads (F64, F32, BF16, F16)") == 0);
  }
  SUBCASE("shape does not match the byte span, and shapes that overflow") {
    CHECK(parse_error(raw_file(R"({"t":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", data))
              .find("data_offsets [0, 8] span 8 bytes, shape [3] of F32 needs 12") != std::string::npos);
    CHECK(parse_error(raw_file(R"({"t":{"dtype":"F64","shape":[2147483648,2147483648,2147483648],"data_offsets":[0,8]}})",
                               data))
              .find("m.safetensors: tensor 't'") == 0);
    CHECK(parse_error(raw_file(R"({"t":{"dtype":"F32","shape":[2.0],"data_offsets":[0,8]}})", data))
              .find("every dimension must be an integer") != std::string::npos);
    CHECK(parse_error(raw_file(R"({"t":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", data))
              .find("every dimension must be an integer") != std::string::npos);
  }
  SUBCASE("trailing bytes") {
    Bytes b = raw_file(good, data);
    b.push_back(0);
    CHECK(parse_error(b).find("1 trailing bytes after the last tensor") != std::string::npos);
  }
  SUBCASE("duplicate names") {
    const std::string dup =
        R"({"t":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"t":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})";
    CHECK(parse_error(raw_file(dup, data)).find("key 't' appears twice") != std::string::npos);
  }
  SUBCASE("metadata must map strings to strings") {
    const std::string meta = R"({"__metadata__":{"n":3},"t":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
    CHECK(parse_error(raw_file(meta, data)).find("__metadata__ 'n': values must be strings (got a number)") !=
          std::string::npos);
    const std::string meta2 = R"({"__metadata__":[],"t":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
    CHECK(parse_error(raw_file(meta2, data)).find("__metadata__ must be an object") != std::string::npos);
  }
  SUBCASE("unknown fields and empty names") {
    CHECK(parse_error(raw_file(R"({"t":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":1}})", data))
              .find("unknown field 'x'") != std::string::npos);
    CHECK(parse_error(raw_file(R"({"":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", data))
              .find("empty name") != std::string::npos);
  }
  SUBCASE("NaN and inf in the data are refused (docs/weights.md)") {
    const std::string msg = parse_error(raw_file(good, f32_bytes({1.0f, std::numeric_limits<float>::quiet_NaN()})));
    CHECK(msg.find("tensor 't': element 1 is nan") != std::string::npos);
    CHECK(parse_error(raw_file(good, f32_bytes({-std::numeric_limits<float>::infinity(), 0.0f})))
              .find("element 0 is -inf") != std::string::npos);
  }
}

TEST_CASE("safetensors: the writer refuses what the reader would") {
  CHECK(input_error([] { kvlab::encode_safetensors({{"t", "F32", {2}, {1.0}}}, {}); }).find("1 values given") !=
        std::string::npos);
  CHECK(input_error([] { kvlab::encode_safetensors({{"t", "F32", {1}, {1.0}}, {"t", "F32", {1}, {1.0}}}, {}); })
            .find("given twice") != std::string::npos);
  CHECK(input_error([] { kvlab::encode_safetensors({{"t", "I8", {1}, {1.0}}}, {}); }).find("I8") != std::string::npos);
  CHECK(input_error([] { kvlab::encode_safetensors({{"t", "F16", {1}, {1e5}}}, {}); }).find("overflows F16") !=
        std::string::npos);
  CHECK(input_error([] { kvlab::encode_safetensors({{"t", "F32", {1}, {1e300}}}, {}); }).find("overflows F32") !=
        std::string::npos);
  CHECK(input_error([] { kvlab::encode_safetensors({{"t", "F64", {1}, {std::nan("")}}}, {}); })
            .find("not finite") != std::string::npos);
}

TEST_CASE("weights: a MiniGPT saved and loaded gives the same logits; config from metadata or config.json") {
  auto c = small_config();
  for (int cla : {1, 2}) {
    for (auto pos : {kvlab::Positional::learned, kvlab::Positional::rope}) {
      c.cla_share = cla;
      c.positional = pos;
      CAPTURE(cla);
      const kvlab::MiniGPT<double> m(c, 7);
      const std::string path = tmp_path("roundtrip.safetensors");
      kvlab::save_gpt(m, path, {{"note", "test"}});
      const auto f = kvlab::read_safetensors(path);
      CHECK(f.metadata.at("note") == "test");
      CHECK(f.metadata.at("format") == "pt");
      CHECK(f.tensors.size() == kvlab::gpt_tensor_layout(c).size());
      const auto back = kvlab::load_gpt<double>(path);
      CHECK(kvlab::model_config_to_json(back.config()) == kvlab::model_config_to_json(c));
      const std::vector<int> ids = {1, 5, 3, 9, 0};
      auto c1 = m.make_cache(kvlab::CacheKind::prealloc, 8);
      auto c2 = back.make_cache(kvlab::CacheKind::prealloc, 8);
      CHECK((m.forward(ids, 0, *c1) - back.forward(ids, 0, *c2)).cwiseAbs().maxCoeff() == 0.0);
      std::filesystem::remove(path);
    }
  }
  // nn.Linear layout: q_proj.weight is [n_head*head_dim, d_model], the transpose of w_q.
  c = small_config();
  const kvlab::MiniGPT<float> m(c, 3);
  const auto ts = kvlab::gpt_to_tensors(m, "F32");
  const SafeTensor* q = nullptr;
  for (const auto& t : ts)
    if (t.name == "transformer.h.1.attn.q_proj.weight") q = &t;
  REQUIRE(q != nullptr);
  CHECK(q->shape == std::vector<std::int64_t>{16, 16});
  CHECK(q->values[1 * 16 + 2] == m.weights().blocks[1].w_q(2, 1));

  // No kvlab.config in the metadata: config.json beside the file.
  const auto dir = std::filesystem::temp_directory_path() / "kvlab_test_weights_dir";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "model.safetensors").string();
  kvlab::write_safetensors(path, ts, {});
  std::filesystem::remove(dir / "config.json");
  CHECK(input_error([&] { kvlab::load_gpt<float>(path); }).find("no config.json beside it") != std::string::npos);
  std::ofstream(dir / "config.json") << kvlab::model_config_to_json(c);
  CHECK(kvlab::load_gpt<float>(path).config().n_kv_head == 2);
  std::ofstream(dir / "config.json") << R"({"n_layer": 2, "d_modle": 16})";
  CHECK(input_error([&] { kvlab::load_gpt<float>(path); }).find("unknown field 'd_modle'") != std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("weights: the file must hold exactly the config's tensors with their shapes") {
  const auto c = small_config();
  const kvlab::MiniGPT<double> m(c, 1);
  auto ts = kvlab::gpt_to_tensors(m, "F64");
  const auto meta = std::map<std::string, std::string>{{"kvlab.config", kvlab::model_config_to_json(c)}};
  const auto load = [&](const std::vector<SafeTensor>& t) {
    const auto file = kvlab::parse_safetensors(kvlab::encode_safetensors(t, meta), "w.safetensors");
    return input_error([&] { kvlab::gpt_from_tensors<double>(c, file, "w.safetensors"); });
  };
  auto missing = ts;
  missing.erase(missing.begin() + 3);
  CHECK(load(missing).find("w.safetensors: tensor 'transformer.h.0.ln_1.bias' missing") == 0);
  auto extra = ts;
  extra.push_back({"transformer.h.2.ln_1.weight", "F64", {16}, std::vector<double>(16, 1.0)});
  CHECK(load(extra).find("unexpected tensor 'transformer.h.2.ln_1.weight'") != std::string::npos);
  auto wrong = ts;
  for (auto& t : wrong)
    if (t.name == "lm_head.weight") t.shape = {16, 11};
  CHECK(load(wrong).find("tensor 'lm_head.weight': shape [16, 11], config needs [11, 16]") != std::string::npos);
  // A config in the metadata that does not validate names its field.
  const auto bad = kvlab::encode_safetensors(ts, {{"kvlab.config", R"({"n_head": 4, "n_kv_head": 3})"}});
  const std::string path = tmp_path("badcfg.safetensors");
  {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bad.data()), static_cast<std::streamsize>(bad.size()));
  }
  CHECK(input_error([&] { kvlab::load_gpt<double>(path); }).find("n_kv_head") != std::string::npos);
  std::filesystem::remove(path);
  CHECK(input_error([] { kvlab::read_safetensors("/nonexistent/x.safetensors"); }).find("cannot open") !=
        std::string::npos);
}

TEST_CASE("MiniGPT(config, weights) names the weight whose shape is wrong") {
  const auto c = small_config();
  kvlab::MiniGPT<double> m(c, 1);
  auto w = m.weights();
  CHECK_NOTHROW(kvlab::MiniGPT<double>(c, w));
  w.blocks[1].w_q.resize(16, 8);
  CHECK(input_error([&] { kvlab::MiniGPT<double>(c, w); }) ==
        "weights: blocks[1].w_q: shape [16, 8], config needs [16, 16]");
  w = m.weights();
  w.blocks.pop_back();
  CHECK(input_error([&] { kvlab::MiniGPT<double>(c, w); }).find("1 blocks, config needs n_layer = 2") !=
        std::string::npos);
}

}  // namespace model_weights_io_test

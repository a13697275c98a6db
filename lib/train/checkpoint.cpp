#include "train/checkpoint.hpp"

#include <cstdint>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "train/backprop.hpp"

namespace kvlab::train {

namespace {

struct Entry {
  std::string name;
  std::vector<std::int64_t> shape;  // file shape ([out, in] for Linear weights)
  float* data;                      // kvlab layout
  bool transpose;                   // a Mat [in, out] stored as [out, in]
  Eigen::Index rows, cols;          // kvlab shape
};

std::vector<Entry> entries(GptWeights<float>& w) {
  std::vector<Entry> out;
  for (const auto& p : param_refs(w)) {
    Entry e{p.name, {}, p.data, false, p.size, 1};
    out.push_back(e);
  }
  // Fill shapes from the tensors themselves, in param_refs order.
  std::size_t i = 0;
  auto mat = [&](Mat<float>& m, bool linear) {
    Entry& e = out[i++];
    e.rows = m.rows();
    e.cols = m.cols();
    e.transpose = linear;
    e.shape = linear ? std::vector<std::int64_t>{m.cols(), m.rows()} : std::vector<std::int64_t>{m.rows(), m.cols()};
  };
  auto vec = [&](Vec<float>& v) {
    Entry& e = out[i++];
    e.rows = v.size();
    e.cols = 1;
    e.shape = {v.size()};
  };
  mat(w.wte, false);
  mat(w.wpe, false);
  for (auto& b : w.blocks) {
    vec(b.ln1_gain), vec(b.ln1_bias), mat(b.w_q, true), vec(b.b_q), mat(b.w_k, true), vec(b.b_k);
    mat(b.w_v, true), vec(b.b_v), mat(b.w_o, true), vec(b.b_o), vec(b.ln2_gain), vec(b.ln2_bias);
    mat(b.w_fc, true), vec(b.b_fc), mat(b.w_proj, true), vec(b.b_proj);
  }
  vec(w.lnf_gain), vec(w.lnf_bias);
  mat(w.w_lm, true);
  return out;
}

ModelConfig config_from_json(const std::string& text, const std::string& label) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    throw InputError(fmt::format("{}: kvlab.config is not JSON: {}", label, e.what()));
  }
  ModelConfig c;
  try {
    c.n_layer = j.at("n_layer").get<int>();
    c.d_model = j.at("d_model").get<int>();
    c.n_head = j.at("n_head").get<int>();
    c.n_kv_head = j.at("n_kv_head").get<int>();
    c.head_dim = j.at("head_dim").get<int>();
    c.vocab_size = j.at("vocab_size").get<int>();
    c.block_size = j.at("block_size").get<int>();
    c.positional = parse_positional(j.value("positional", std::string("learned")));
    c.rope_theta = j.value("rope_theta", 10000.0);
    c.causal = j.value("causal", true);
    c.sliding_window = j.value("sliding_window", 0);
    c.cla_share = j.value("cla_share", 1);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("{}: kvlab.config: {}", label, e.what()));
  }
  c.validate();
  return c;
}

}  // namespace

std::string config_json(const ModelConfig& c) {
  nlohmann::json j = {{"n_layer", c.n_layer},     {"d_model", c.d_model},       {"n_head", c.n_head},
                      {"n_kv_head", c.n_kv_head}, {"head_dim", c.head_dim},     {"vocab_size", c.vocab_size},
                      {"block_size", c.block_size},
                      {"positional", c.positional == Positional::learned ? "learned" : "rope"},
                      {"rope_theta", c.rope_theta}, {"causal", c.causal},       {"sliding_window", c.sliding_window},
                      {"cla_share", c.cla_share}};
  return j.dump();
}

void save_checkpoint(const MiniGPT<float>& model, const std::string& path,
                     const std::map<std::string, std::string>& extra_metadata) {
  GptWeights<float> w = model.weights();
  auto es = entries(w);
  std::sort(es.begin(), es.end(), [](const Entry& a, const Entry& b) { return a.name < b.name; });
  nlohmann::ordered_json header;
  nlohmann::json meta = {{"format", "pt"}, {"kvlab.config", config_json(model.config())}};
  for (const auto& [k, v] : extra_metadata)
    if (k != "kvlab.config") meta[k] = v;
  header["__metadata__"] = meta;
  std::uint64_t offset = 0;
  for (const auto& e : es) {
    const std::uint64_t bytes = static_cast<std::uint64_t>(e.rows * e.cols) * 4;
    header[e.name] = {{"dtype", "F32"}, {"shape", e.shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string h = header.dump();
  while (h.size() % 8 != 0) h.push_back(' ');
  std::ofstream out(path, std::ios::binary);
  if (!out) throw InputError(fmt::format("--out: cannot write {}", path));
  const std::uint64_t n = h.size();
  unsigned char len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>(n >> (8 * i));
  out.write(reinterpret_cast<const char*>(len), 8);
  out.write(h.data(), static_cast<std::streamsize>(h.size()));
  for (const auto& e : es) {
    for (Eigen::Index r = 0; r < (e.transpose ? e.cols : e.rows); ++r)
      for (Eigen::Index c = 0; c < (e.transpose ? e.rows : e.cols); ++c) {
        const float v = e.transpose ? e.data[c * e.cols + r] : e.data[r * e.cols + c];
        std::uint32_t bits;
        std::memcpy(&bits, &v, 4);
        unsigned char b[4];
        for (int i = 0; i < 4; ++i) b[i] = static_cast<unsigned char>(bits >> (8 * i));
        out.write(reinterpret_cast<const char*>(b), 4);
      }
  }
  if (!out) throw InputError(fmt::format("--out: cannot write {}", path));
}

MiniGPT<float> load_checkpoint(const std::string& path, std::map<std::string, std::string>* metadata) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw InputError(fmt::format("{}: not a regular file", path));
  if (std::filesystem::file_size(path, ec) > (std::uintmax_t{1} << 30))
    throw InputError(fmt::format("{}: larger than 1 GiB (kvlab's checkpoints are a few MB)", path));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot open", path));
  std::ostringstream ss;
  ss << in.rdbuf();
  const std::string bytes = ss.str();
  if (bytes.size() < 8) throw InputError(fmt::format("{}: shorter than the 8-byte header length", path));
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[i]);
  if (n > bytes.size() - 8) throw InputError(fmt::format("{}: header length {} exceeds the file", path, n));
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(bytes.substr(8, n));
  } catch (const std::exception& e) {
    throw InputError(fmt::format("{}: header is not JSON", path));
  }
  const std::size_t data0 = 8 + n;
  if (!header.contains("__metadata__") || !header["__metadata__"].contains("kvlab.config"))
    throw InputError(fmt::format("{}: no kvlab.config in __metadata__", path));
  std::map<std::string, std::string> meta;
  for (auto& [k, v] : header["__metadata__"].items())
    if (v.is_string()) meta[k] = v.get<std::string>();
  const ModelConfig c = config_from_json(meta["kvlab.config"], path);
  require_trainable(c);
  MiniGPT<float> model(c, 0);
  auto es = entries(model.weights());
  for (auto& e : es) {
    if (!header.contains(e.name)) throw InputError(fmt::format("{}: tensor '{}' missing", path, e.name));
    const auto& t = header[e.name];
    const std::string dtype = t.value("dtype", "");
    const int size = dtype == "F32" ? 4 : dtype == "F64" ? 8 : 0;
    if (size == 0) throw InputError(fmt::format("{}: tensor '{}': dtype '{}' (this reader: F32, F64)", path, e.name, dtype));
    if (t.value("shape", std::vector<std::int64_t>{}) != e.shape)
      throw InputError(fmt::format("{}: tensor '{}': shape does not match the config", path, e.name));
    const auto off = t.value("data_offsets", std::vector<std::uint64_t>{});
    const std::uint64_t count = static_cast<std::uint64_t>(e.rows * e.cols);
    if (off.size() != 2 || off[1] < off[0] || off[1] - off[0] != count * size || data0 + off[1] > bytes.size())
      throw InputError(fmt::format("{}: tensor '{}': bad data_offsets", path, e.name));
    const unsigned char* p = reinterpret_cast<const unsigned char*>(bytes.data()) + data0 + off[0];
    std::uint64_t k = 0;
    for (Eigen::Index r = 0; r < (e.transpose ? e.cols : e.rows); ++r)
      for (Eigen::Index col = 0; col < (e.transpose ? e.rows : e.cols); ++col, ++k) {
        double v;
        if (size == 4) {
          std::uint32_t bits = 0;
          for (int i = 3; i >= 0; --i) bits = (bits << 8) | p[k * 4 + i];
          float f;
          std::memcpy(&f, &bits, 4);
          v = f;
        } else {
          std::uint64_t bits = 0;
          for (int i = 7; i >= 0; --i) bits = (bits << 8) | p[k * 8 + i];
          std::memcpy(&v, &bits, 8);
        }
        if (!std::isfinite(v)) throw InputError(fmt::format("{}: tensor '{}': non-finite value", path, e.name));
        (e.transpose ? e.data[col * e.cols + r] : e.data[r * e.cols + col]) = static_cast<float>(v);
      }
  }
  if (metadata) *metadata = meta;
  return model;
}

}  // namespace kvlab::train

#include "model/weights_io.hpp"
#include "model/weights_budget.hpp"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "io/json_read.hpp"

namespace kvlab {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

std::string block(int l, const char* rest) { return fmt::format("transformer.h.{}.{}", l, rest); }

/// Shapes of every tensor, in the documented order; the value vectors stay empty.
std::vector<SafeTensor> layout(const ModelConfig& c) {
  const std::int64_t d = c.d_model, q_w = std::int64_t{c.n_head} * c.head_dim, kv_w = c.kv_width();
  const std::int64_t V = c.vocab_size;
  std::vector<SafeTensor> out;
  const auto add = [&](std::string name, std::vector<std::int64_t> shape) {
    out.push_back(SafeTensor{std::move(name), "", std::move(shape), {}});
  };
  add("transformer.wte.weight", {V, d});
  if (c.positional == Positional::learned) add("transformer.wpe.weight", {c.block_size, d});
  for (int l = 0; l < c.n_layer; ++l) {
    add(block(l, "ln_1.weight"), {d});
    add(block(l, "ln_1.bias"), {d});
    add(block(l, "attn.q_proj.weight"), {q_w, d});
    add(block(l, "attn.q_proj.bias"), {q_w});
    if (l % c.cla_share == 0) {
      add(block(l, "attn.k_proj.weight"), {kv_w, d});
      add(block(l, "attn.k_proj.bias"), {kv_w});
      add(block(l, "attn.v_proj.weight"), {kv_w, d});
      add(block(l, "attn.v_proj.bias"), {kv_w});
    }
    add(block(l, "attn.out_proj.weight"), {d, q_w});
    add(block(l, "attn.out_proj.bias"), {d});
    add(block(l, "ln_2.weight"), {d});
    add(block(l, "ln_2.bias"), {d});
    add(block(l, "mlp.c_fc.weight"), {4 * d, d});
    add(block(l, "mlp.c_fc.bias"), {4 * d});
    add(block(l, "mlp.c_proj.weight"), {d, 4 * d});
    add(block(l, "mlp.c_proj.bias"), {d});
  }
  add("transformer.ln_f.weight", {d});
  add("transformer.ln_f.bias", {d});
  add("lm_head.weight", {V, d});
  return out;
}

/// Visits every (tensor name, weight) pair of a model in layout order: f(name, matrix, transpose)
/// for Linear weights and embeddings, f(name, vector) for biases and gains.
template <class T, class W, class FM, class FV>
void for_each_weight(const ModelConfig& c, W& w, FM&& fm, FV&& fv) {
  fm("transformer.wte.weight", w.wte, false);
  if (c.positional == Positional::learned) fm("transformer.wpe.weight", w.wpe, false);
  for (int l = 0; l < c.n_layer; ++l) {
    auto& b = w.blocks[static_cast<std::size_t>(l)];
    fv(block(l, "ln_1.weight"), b.ln1_gain);
    fv(block(l, "ln_1.bias"), b.ln1_bias);
    fm(block(l, "attn.q_proj.weight"), b.w_q, true);
    fv(block(l, "attn.q_proj.bias"), b.b_q);
    if (l % c.cla_share == 0) {
      fm(block(l, "attn.k_proj.weight"), b.w_k, true);
      fv(block(l, "attn.k_proj.bias"), b.b_k);
      fm(block(l, "attn.v_proj.weight"), b.w_v, true);
      fv(block(l, "attn.v_proj.bias"), b.b_v);
    }
    fm(block(l, "attn.out_proj.weight"), b.w_o, true);
    fv(block(l, "attn.out_proj.bias"), b.b_o);
    fv(block(l, "ln_2.weight"), b.ln2_gain);
    fv(block(l, "ln_2.bias"), b.ln2_bias);
    fm(block(l, "mlp.c_fc.weight"), b.w_fc, true);
    fv(block(l, "mlp.c_fc.bias"), b.b_fc);
    fm(block(l, "mlp.c_proj.weight"), b.w_proj, true);
    fv(block(l, "mlp.c_proj.bias"), b.b_proj);
  }
  fv("transformer.ln_f.weight", w.lnf_gain);
  fv("transformer.ln_f.bias", w.lnf_bias);
  fm("lm_head.weight", w.w_lm, true);
}

int json_int(const json& v, const std::string& where, const char* field) {
  if (!v.is_number_integer())  // json_brief: a nested value is not dumped (dump() recurses per level)
    throw InputError(fmt::format("{}: {}: must be an integer (got {})", where, field, json_brief(v, 40)));
  // The number as written: an unsigned value above 2^63 read as int64 printed 2^64 - 1 as -1.
  if (v.is_number_unsigned() && v.get<std::uint64_t>() > std::uint64_t{1} << 31)
    throw InputError(fmt::format("{}: {}: {} is out of range", where, field, v.get<std::uint64_t>()));
  const auto x = v.get<std::int64_t>();
  if (x < -(std::int64_t{1} << 31) || x > (std::int64_t{1} << 31) - 1)
    throw InputError(fmt::format("{}: {}: {} is out of range", where, field, x));
  return static_cast<int>(x);
}

/// A config.json beside a weights file: a regular file (config_of checked) of at most 1 MiB,
/// its size looked at before it is read.
std::string read_small_text(const std::string& path) {
  constexpr std::uintmax_t kMax = 1 << 20;
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (ec) throw InputError(fmt::format("{}: cannot read: {}", printable(path), ec.message()));
  if (size > kMax) throw InputError(fmt::format("{}: larger than 1 MiB, not a config", printable(path)));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot open", printable(path)));
  std::string text;
  text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (text.size() > kMax) throw InputError(fmt::format("{}: larger than 1 MiB, not a config", printable(path)));
  return text;
}

/// The config of an already-read file: its metadata, else config.json beside `path`.
ModelConfig unbudgeted_config(const SafeTensorsFile& file, const std::string& path) {
  const auto it = file.metadata.find(kConfigMetadataKey);
  if (it != file.metadata.end())
    return model_config_from_json(it->second, path + ": metadata " + kConfigMetadataKey);
  const fs::path beside = fs::path(path).parent_path() / "config.json";
  std::error_code ec;
  if (!fs::is_regular_file(beside, ec))
    throw InputError(fmt::format("{}: no \"{}\" in the metadata and no config.json beside it", printable(path),
                                 kConfigMetadataKey));
  return model_config_from_json(read_small_text(beside.string()), beside.string());
}

}  // namespace

std::string model_config_to_json(const ModelConfig& c) {
  json j;
  j["n_layer"] = c.n_layer;
  j["d_model"] = c.d_model;
  j["n_head"] = c.n_head;
  j["n_kv_head"] = c.n_kv_head;
  j["head_dim"] = c.head_dim;
  j["vocab_size"] = c.vocab_size;
  j["block_size"] = c.block_size;
  j["positional"] = c.positional == Positional::rope ? "rope" : "learned";
  j["rope_theta"] = c.rope_theta;
  j["causal"] = c.causal;
  j["sliding_window"] = c.sliding_window;
  j["cla_share"] = c.cla_share;
  return j.dump();  // nlohmann::json keeps keys sorted
}

ModelConfig model_config_from_json(const std::string& text, const std::string& label_in) {
  const std::string where = printable(label_in);
  json j;
  try {  // bounded depth (a nested value is never dumped), and a key twice is not "last wins"
    j = parse_json_bounded(text, {.max_depth = kMaxJsonDepth, .reject_duplicate_keys = true});
  } catch (const JsonReadError& e) {
    throw InputError(fmt::format("{}: model config is not valid JSON: {}", where, e.what()));
  }
  if (!j.is_object()) throw InputError(fmt::format("{}: model config must be a JSON object", where));
  ModelConfig c;
  for (const auto& [k, v] : j.items()) {
    if (k == "n_layer") c.n_layer = json_int(v, where, "n_layer");
    else if (k == "d_model") c.d_model = json_int(v, where, "d_model");
    else if (k == "n_head") c.n_head = json_int(v, where, "n_head");
    else if (k == "n_kv_head") c.n_kv_head = json_int(v, where, "n_kv_head");
    else if (k == "head_dim") c.head_dim = json_int(v, where, "head_dim");
    else if (k == "vocab_size") c.vocab_size = json_int(v, where, "vocab_size");
    else if (k == "block_size") c.block_size = json_int(v, where, "block_size");
    else if (k == "sliding_window") c.sliding_window = json_int(v, where, "sliding_window");
    else if (k == "cla_share") c.cla_share = json_int(v, where, "cla_share");
    else if (k == "positional") {
      if (!v.is_string()) throw InputError(fmt::format("{}: positional: must be \"learned\" or \"rope\"", where));
      try {
        c.positional = parse_positional(v.get<std::string>());
      } catch (const InputError&) {
        throw InputError(fmt::format("{}: positional: must be \"learned\" or \"rope\" (got '{}')", where,
                                     printable(v.get<std::string>(), 40)));
      }
    } else if (k == "rope_theta") {
      if (!v.is_number()) throw InputError(fmt::format("{}: rope_theta: must be a number", where));
      c.rope_theta = v.get<double>();
    } else if (k == "causal") {
      if (!v.is_boolean()) throw InputError(fmt::format("{}: causal: must be true or false", where));
      c.causal = v.get<bool>();
    } else {
      throw InputError(fmt::format("{}: model config: unknown field '{}' (known: n_layer, d_model, n_head, "
                                   "n_kv_head, head_dim, vocab_size, block_size, positional, rope_theta, "
                                   "causal, sliding_window, cla_share)", where, printable(k, 40)));
    }
  }
  try {
    c.validate();
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: model config: {}", where, e.what()));
  }
  return c;
}

std::string config_field(const ModelConfig& config, const std::string& name) {
  const json j = json::parse(model_config_to_json(config));
  const auto it = j.find(name);
  if (it == j.end()) return "?";
  return it->is_string() ? it->get<std::string>() : it->dump();
}

std::vector<SafeTensor> gpt_tensor_layout(const ModelConfig& config) {
  config.validate();
  return layout(config);
}

void require_weights_budget(const ModelConfig& c, const std::string& label_in) {
  const std::string label = printable(label_in);
  if (c.vocab_size > kMaxWeightsVocab)
    throw InputError(fmt::format("{}: vocab_size {} exceeds the budget of {} for the CPU checks", label,
                                 c.vocab_size, kMaxWeightsVocab));
  if (c.block_size > kMaxWeightsBlockSize)
    throw InputError(fmt::format("{}: block_size {} exceeds the budget of {} for the CPU checks", label,
                                 c.block_size, kMaxWeightsBlockSize));
  // n_layer, n_kv_head, head_dim <= 2^16 and block_size <= 2^16 here: the product is below 2^68,
  // exact in 128 bits (n_kv_head * head_dim alone may overflow ModelConfig::kv_width()'s int).
  __extension__ typedef unsigned __int128 u128;
  const u128 cache = u128{16} * static_cast<std::uint64_t>(c.n_layer) * static_cast<std::uint64_t>(c.block_size) *
                     static_cast<std::uint64_t>(c.n_kv_head) * static_cast<std::uint64_t>(c.head_dim);
  if (cache > kMaxWeightsCacheBytes)
    throw InputError(fmt::format("{}: a K/V cache of block_size {} positions ({} layers x {} K/V heads x head_dim {}, "
                                 "float64) takes {:.4g} bytes, more than the budget of {} bytes (1 GiB) for the CPU "
                                 "checks", label, c.block_size, c.n_layer, c.n_kv_head, c.head_dim,
                                 static_cast<double>(cache), kMaxWeightsCacheBytes));
}

ModelConfig weights_file_config(const SafeTensorsFile& file, const std::string& path) {
  const ModelConfig c = unbudgeted_config(file, path);
  require_weights_budget(c, path);
  return c;
}

ModelConfig read_weights_config(const std::string& path) {
  return weights_file_config(read_safetensors(path), path);
}

template <class T>
std::vector<SafeTensor> gpt_to_tensors(const MiniGPT<T>& model, const std::string& dtype) {
  safetensors_dtype_size(dtype);
  std::vector<SafeTensor> out;
  const auto fm = [&](const std::string& name, const Mat<T>& m, bool transpose) {
    SafeTensor t{name, dtype, {}, {}};
    const Mat<T> s = transpose ? Mat<T>(m.transpose()) : m;  // row-major [out, in]
    t.shape = {s.rows(), s.cols()};
    t.values.assign(s.data(), s.data() + s.size());
    out.push_back(std::move(t));
  };
  const auto fv = [&](const std::string& name, const Vec<T>& v) {
    out.push_back(SafeTensor{name, dtype, {v.size()}, std::vector<double>(v.data(), v.data() + v.size())});
  };
  for_each_weight<T>(model.config(), model.weights(), fm, fv);
  return out;
}

template <class T>
MiniGPT<T> gpt_from_tensors(const ModelConfig& config, const SafeTensorsFile& file, const std::string& label_in) {
  const std::string label = printable(label_in);
  config.validate();
  const auto expected = layout(config);
  std::set<std::string> names;
  for (const auto& e : expected) {
    names.insert(e.name);
    const SafeTensor* t = file.find(e.name);
    if (t == nullptr)
      throw InputError(fmt::format("{}: tensor '{}' missing (config needs shape {})", label, e.name,
                                   safetensors_shape_text(e.shape)));
    if (t->shape != e.shape)
      throw InputError(fmt::format("{}: tensor '{}': shape {}, config needs {}", label, e.name,
                                   safetensors_shape_text(t->shape), safetensors_shape_text(e.shape)));
  }
  for (const auto& t : file.tensors)
    if (!names.count(t.name))
      throw InputError(fmt::format("{}: unexpected tensor '{}' (not in the layout of this config; "
                                   "docs/weights.md)", label, printable(t.name)));
  GptWeights<T> w;
  w.blocks.resize(static_cast<std::size_t>(config.n_layer));
  const auto fm = [&](const std::string& name, Mat<T>& m, bool transpose) {
    const SafeTensor& t = *file.find(name);
    Mat<T> s(t.shape[0], t.shape[1]);
    for (Eigen::Index i = 0; i < s.size(); ++i) s.data()[i] = static_cast<T>(t.values[static_cast<std::size_t>(i)]);
    m = transpose ? Mat<T>(s.transpose()) : s;
  };
  const auto fv = [&](const std::string& name, Vec<T>& v) {
    const SafeTensor& t = *file.find(name);
    v.resize(t.shape[0]);
    for (Eigen::Index i = 0; i < v.size(); ++i) v(i) = static_cast<T>(t.values[static_cast<std::size_t>(i)]);
  };
  for_each_weight<T>(config, w, fm, fv);
  // A F64 value beyond float's range becomes inf in MiniGPT<float>.
  if constexpr (std::is_same_v<T, float>) {
    for (const auto& t : file.tensors)
      for (double x : t.values)
        if (!std::isfinite(static_cast<float>(x)))
          throw InputError(fmt::format("{}: tensor '{}': {} overflows float32 (use --dtype f64)", label,
                                       printable(t.name), x));
  }
  return MiniGPT<T>(config, std::move(w));
}

template <class T>
MiniGPT<T> load_gpt(const std::string& path) {
  const SafeTensorsFile file = read_safetensors(path);
  const ModelConfig config = weights_file_config(file, path);
  MiniGPT<T> model = gpt_from_tensors<T>(config, file, path);
  model.set_source(path);  // forward() then names the file when the weights overflow
  return model;
}

template <class T>
void save_gpt(const MiniGPT<T>& model, const std::string& path, const std::map<std::string, std::string>& extra,
              const std::string& dtype) {
  if (extra.count(kConfigMetadataKey))
    throw InputError(fmt::format("save_gpt: extra metadata may not set \"{}\"", kConfigMetadataKey));
  std::map<std::string, std::string> metadata = extra;
  metadata["format"] = metadata.count("format") ? metadata["format"] : "pt";
  metadata[kConfigMetadataKey] = model_config_to_json(model.config());
  const std::string dt = dtype.empty() ? (std::is_same_v<T, double> ? "F64" : "F32") : dtype;
  write_safetensors(path, gpt_to_tensors(model, dt), metadata);
}

#define KVLAB_WEIGHTS_IO(T)                                                                               \
  template std::vector<SafeTensor> gpt_to_tensors<T>(const MiniGPT<T>&, const std::string&);              \
  template MiniGPT<T> gpt_from_tensors<T>(const ModelConfig&, const SafeTensorsFile&, const std::string&); \
  template MiniGPT<T> load_gpt<T>(const std::string&);                                                    \
  template void save_gpt<T>(const MiniGPT<T>&, const std::string&, const std::map<std::string, std::string>&, \
                            const std::string&);
KVLAB_WEIGHTS_IO(double)
KVLAB_WEIGHTS_IO(float)
#undef KVLAB_WEIGHTS_IO

}  // namespace kvlab

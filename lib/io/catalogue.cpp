#include "io/catalogue.hpp"

#include <algorithm>
#include <cstdlib>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iterator>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "io/data_dir.hpp"
#include "core/error.hpp"
#include "io/json_read.hpp"

namespace kvlab {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

constexpr std::uintmax_t kMaxConfigFileBytes = 16u << 20;  // a real config.json is a few KiB

/// How a JSON value that is not what we wanted reads in an error: `"32" (a string)`, `32.5`.
std::string describe(const json& v) {
  switch (v.type()) {
    case json::value_t::string: return printable(v.dump(-1, ' ', true), 60) + " (a string)";
    case json::value_t::boolean: return v.dump() + " (a boolean)";
    case json::value_t::null: return "null";
    case json::value_t::array: return "an array";
    case json::value_t::object: return "an object";
    case json::value_t::number_float: return printable(v.dump(), 60) + " (not an integer)";
    default: return printable(v.dump(), 60);
  }
}

/// The first alias present in `j` with a non-null value; its name goes to *field.
const json* find_field(const json& j, std::initializer_list<const char*> aliases, std::string* field) {
  for (const char* a : aliases) {
    auto it = j.find(a);
    if (it != j.end() && !it->is_null()) {
      *field = a;
      return &*it;
    }
  }
  return nullptr;
}

std::string alias_list(std::initializer_list<const char*> aliases) {
  std::string out;
  for (const char* a : aliases) out += (out.empty() ? "" : " | ") + std::string(a);
  return out;
}

/// A JSON integer in [lo, hi]; a float, string, bool or out-of-range value is an InputError.
std::uint64_t as_integer(const json& v, const std::string& origin, const std::string& field,
                         std::uint64_t lo, std::uint64_t hi) {
  const auto fail = [&](const std::string& got) {
    return InputError(fmt::format("{}: {}: must be an integer in [{}, {}] (got {})", origin, field,
                                  lo, hi, got));
  };
  if (v.is_number_unsigned()) {
    const auto x = v.get<std::uint64_t>();
    if (x < lo || x > hi) throw fail(std::to_string(x));
    return x;
  }
  if (v.is_number_integer()) {  // signed storage: what a parser gives for a negative number
    const auto x = v.get<std::int64_t>();
    if (x < 0 || static_cast<std::uint64_t>(x) < lo || static_cast<std::uint64_t>(x) > hi)
      throw fail(std::to_string(x));
    return static_cast<std::uint64_t>(x);
  }
  throw fail(describe(v));
}

/// A required integer field under one of `aliases`.
std::uint64_t required_size(const json& j, const std::string& origin,
                            std::initializer_list<const char*> aliases, std::string* used,
                            std::uint64_t hi = kMaxConfigSize) {
  const json* v = find_field(j, aliases, used);
  if (!v)
    throw InputError(fmt::format("{}: {}: missing (a positive integer is required)", origin,
                                 alias_list(aliases)));
  return as_integer(*v, origin, *used, 1, hi);
}

/// An optional integer field; null counts as absent.
std::optional<std::uint64_t> optional_size(const json& j, const std::string& origin,
                                           std::initializer_list<const char*> aliases,
                                           std::uint64_t hi = kMaxConfigSize) {
  std::string used;
  const json* v = find_field(j, aliases, &used);
  if (!v) return std::nullopt;
  return as_integer(*v, origin, used, 1, hi);
}

/// An optional boolean field (multi_query, new_decoder_architecture, use_sliding_window).
std::optional<bool> optional_bool(const json& j, const std::string& origin, const char* field) {
  auto it = j.find(field);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_boolean())
    throw InputError(fmt::format("{}: {}: must be true or false (got {})", origin, field, describe(*it)));
  return it->get<bool>();
}

std::optional<std::string> optional_string(const json& j, const char* field) {
  auto it = j.find(field);
  if (it == j.end() || !it->is_string()) return std::nullopt;
  std::string s = it->get<std::string>();  // valid UTF-8: the parser checked it
  if (s.empty()) return std::nullopt;
  for (auto& ch : s)  // keep "§" and "≈"; only control characters would break a line
    if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) ch = ' ';
  // At most 300 bytes, cut before a UTF-8 continuation byte (10xxxxxx): a cut inside "é" left
  // invalid UTF-8 that the JSON writer refused with an internal error (found with apps/fuzz).
  std::size_t n = std::min<std::size_t>(s.size(), 300);
  while (n > 0 && n < s.size() && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  s.resize(n);
  return s;
}

/// A finite real in [1, 1e21] (bandwidths and FLOP rates; "2039e9" is a JSON float). The floor
/// of 1 keeps ratios finite: a bandwidth of 5e-324 B/s made the ridge point and the step time
/// infinite (found with apps/fuzz); no device moves less than a byte or a FLOP per second.
double positive_real(const json& j, const std::string& origin, const char* field, bool required,
                     bool* present = nullptr) {
  auto it = j.find(field);
  if (it == j.end() || it->is_null()) {
    if (required)
      throw InputError(fmt::format("{}: {}: missing (a finite number in [1, 1e21] is required)",
                                   origin, field));
    if (present) *present = false;
    return 0.0;
  }
  if (present) *present = true;
  if (!it->is_number())
    throw InputError(fmt::format("{}: {}: must be a finite number in [1, 1e21] (got {})", origin,
                                 field, describe(*it)));
  const double x = it->get<double>();
  if (!std::isfinite(x) || x < 1.0 || x > 1e21)
    throw InputError(fmt::format("{}: {}: must be a finite number in [1, 1e21] (got {})", origin,
                                 field, printable(it->dump(), 60)));
  return x;
}

/// The whole file as text, after the checks that keep the error one line and the read bounded.
std::string read_text_file(const std::string& path) {
  const std::string shown = printable(path);
  std::error_code ec;
  const auto st = fs::status(path, ec);
  if (ec && st.type() != fs::file_type::not_found)
    throw InputError(fmt::format("{}: cannot access: {}", shown, ec.message()));
  if (st.type() == fs::file_type::not_found)
    throw InputError(fmt::format("{}: no such file", shown));
  if (st.type() == fs::file_type::directory)
    throw InputError(fmt::format("{}: is a directory; give the path of a JSON file", shown));
  if (st.type() != fs::file_type::regular)
    throw InputError(fmt::format("{}: not a regular file; give the path of a JSON file", shown));
  const auto size = fs::file_size(path, ec);
  if (ec) throw InputError(fmt::format("{}: cannot read: {}", shown, ec.message()));
  if (size > kMaxConfigFileBytes)
    throw InputError(fmt::format("{}: {} bytes is too large for a model or GPU JSON file (limit {} bytes)",
                                 shown, size, kMaxConfigFileBytes));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot open: {}", shown, std::strerror(errno)));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw InputError(fmt::format("{}: read error", shown));
  return text;
}

/// Parses `text` as one JSON object; a syntax error becomes one line with its position. Nesting
/// deeper than kMaxJsonDepth is refused up front (a recursive dump of 16 MB of '[' in a message
/// overflowed the stack); parse_json_bounded takes linear time.
json parse_object(const std::string& text, const std::string& origin) {
  json j;
  try {
    j = parse_json_bounded(text);
  } catch (const JsonReadError& e) {
    if (e.kind() != JsonReadError::Kind::syntax || e.byte() == 0)
      // Too deep, or valid JSON nlohmann cannot hold: a number beyond a double, e.g. 1e400
      // (out_of_range.406, found by apps/fuzz; it used to escape as an internal error).
      throw InputError(fmt::format("{}: unreadable JSON: {}", origin, e.what()));
    const std::size_t at = std::min<std::size_t>(e.byte() - 1, text.size());
    std::size_t line = 1, column = 1;
    for (std::size_t i = 0; i < at; ++i) {
      if (text[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    throw InputError(fmt::format("{}: not valid JSON: {} at line {}, column {} (byte {})", origin, e.what(), line,
                                 column, e.byte()));
  }
  if (!j.is_object())
    throw InputError(fmt::format("{}: must be a JSON object {{...}} (got {})", origin, describe(j)));
  return j;
}

/// Names are file stems made of [a-z0-9._-], so a name can never reach outside the catalogue.
bool plausible_name(const std::string& s) {
  if (s.empty() || s.size() > 100 || s.front() == '.') return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_';
  });
}

/// How a missing or empty catalogue folder reads: it names KVLAB_DATA, the usual cause.
std::string no_catalogue(const std::string& folder, const std::string& problem) {
  const char* env = std::getenv("KVLAB_DATA");
  if (env && *env)
    return fmt::format("KVLAB_DATA={} holds no catalogue: the folder {} {} (KVLAB_DATA must name kvlab's data/ "
                       "folder, or be unset)", printable(env), printable(folder), problem);
  return fmt::format("catalogue folder {} {} (set KVLAB_DATA to kvlab's data/ folder)", printable(folder), problem);
}

std::vector<std::string> stems_in(const std::string& folder) {
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) throw InputError(no_catalogue(folder, "is not there"));
  std::vector<std::string> names;
  for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() != ".json") continue;
    const std::string stem = it->path().stem().string();
    if (plausible_name(stem)) names.push_back(stem);
  }
  if (ec) throw InputError(no_catalogue(folder, "cannot be listed: " + ec.message()));
  if (names.empty()) throw InputError(no_catalogue(folder, "holds no NAME.json entry"));
  std::sort(names.begin(), names.end());
  return names;
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}


// ---- the layer layout, read the way transformers reads it ----------------------------------

/// Python's json module writes float('inf') and float('nan') as the bare words Infinity,
/// -Infinity and NaN, and reads them back; nlohmann (strict RFC 8259) refuses them. Outside
/// strings they become the strings "Infinity", "-Infinity", "NaN": a field kvlab does not size
/// with (Nemotron-H's time_step_limit) then reads as it does in Python, and a field kvlab sizes
/// with is refused by name ("... (got "Infinity" (a string))"), never read as a number.
std::string quote_python_literals(const std::string& text) {
  if (text.find("Infinity") == std::string::npos && text.find("NaN") == std::string::npos)
    return text;
  std::string out;
  out.reserve(text.size() + 16);
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < text.size()) out += text[++i];
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
      out += c;
      continue;
    }
    bool replaced = false;
    for (const char* word : {"-Infinity", "Infinity", "NaN"}) {
      const std::size_t n = std::strlen(word);
      if (text.compare(i, n, word) == 0) {
        out += '"';
        out += word;
        out += '"';
        i += n - 1;
        replaced = true;
        break;
      }
    }
    if (!replaced) out += c;
  }
  return out;
}

/// transformers' defaults for the fields a config of this model_type may leave out, where kvlab
/// sizes with them (each from the __init__ signature of the config class named). A minimal
/// Gemma 3 text_config gives only hidden_size, intermediate_size and num_hidden_layers. Fields
/// that have aliases (hidden_size | d_model, num_hidden_layers | n_layer, Mamba's state_size |
/// d_state) are left out: a default must never shadow the config's own value under another name.
json model_type_defaults(const std::string& model_type) {
  if (model_type == "gemma3_text")  // Gemma3TextConfig
    return {{"vocab_size", 262208}, {"num_attention_heads", 8}, {"num_key_value_heads", 4},
            {"head_dim", 256}, {"max_position_embeddings", 131072}, {"sliding_window", 4096}};
  if (model_type == "gemma2")  // Gemma2Config
    return {{"vocab_size", 256000}, {"num_attention_heads", 8}, {"num_key_value_heads", 4},
            {"head_dim", 256}, {"max_position_embeddings", 8192}, {"sliding_window", 4096}};
  if (model_type == "llama4_text")  // Llama4TextConfig
    return {{"vocab_size", 202048}, {"num_attention_heads", 40}, {"num_key_value_heads", 8},
            {"head_dim", 128}, {"attention_chunk_size", 8192}, {"no_rope_layer_interval", 4}};
  if (model_type == "gpt_bigcode")  // GPTBigCodeConfig: multi_query=True
    return {{"multi_query", true}};
  if (model_type == "mistral")  // MistralConfig: sliding_window=4096
    return {{"sliding_window", 4096}};
  if (model_type == "gpt_oss")  // GptOssConfig
    return {{"sliding_window", 128}, {"head_dim", 64}, {"num_key_value_heads", 8}};
  if (model_type == "mamba")  // MambaConfig
    return {{"vocab_size", 50280}};
  if (model_type == "jamba")  // JambaConfig
    return {{"attn_layer_period", 8}, {"attn_layer_offset", 4}, {"mamba_d_state", 16},
            {"mamba_d_conv", 4}, {"mamba_expand", 2}, {"num_key_value_heads", 8}};
  if (model_type == "qwen3_next")  // Qwen3NextConfig
    return {{"full_attention_interval", 4}};
  return json::object();
}

/// model_types whose every layer is attention-free (no per-token cache): their config classes
/// have no attention heads at all.
bool attention_free_type(const std::string& t) {
  return t == "mamba" || t == "mamba2" || t == "falcon_mamba" || t == "rwkv" || t == "xlstm";
}

/// model_types kvlab reads: plain decoders (every layer full attention, or one window on every
/// layer), and the layouts interpreted below. Another model_type is named in a warning.
bool known_model_type(const std::string& t) {
  static const char* const known[] = {
      "llama", "llama4", "llama4_text", "mistral", "mixtral", "ministral", "qwen2", "qwen2_moe",
      "qwen3", "qwen3_moe", "qwen3_next", "gemma", "gemma2", "gemma3", "gemma3_text", "gpt_oss",
      "jamba", "nemotron_h", "mamba", "mamba2", "falcon_mamba", "falcon", "RefinedWeb",
      "RefinedWebModel", "gpt_bigcode", "gpt2", "gptj", "gpt_neox", "opt", "bloom", "phi", "phi3",
      "starcoder2", "deepseek_v2", "deepseek_v3", "olmo", "olmo2", "internlm2", "baichuan",
      "chatglm", "yi", "stablelm", "cohere", "cohere2", "granite", "exaone", "smollm3", "rwkv", "xlstm"};
  for (const char* k : known)
    if (t == k) return true;
  return false;
}

/// Fields that name an attention layout kvlab does not interpret (per-layer windows, head counts
/// or K/V sharing it does not read): named in a warning, so that no total built without them is
/// reported as PASS.
constexpr const char* kUninterpretedLayoutFields[] = {
    "attention_types",      // GPT-Neo: [[["global", "local"], 12]] with window_size
    "attention_layers",     // GPT-Neo, expanded
    "window_size",          // GPT-Neo's local window
    "attention_window",     // Longformer-style per-layer windows
    "block_configs",        // DeciLM / Nemotron-NAS: per-layer attention replaced or shared
    "num_kv_shared_layers", // Gemma 3n: the last layers reuse earlier layers' K/V
    "global_attn_every_n_layers",  // ModernBERT-style alternation
    "attn_type_list",       // MiniMax: linear / softmax attention per layer
    "layer_group_size",
    "num_key_value_heads_per_layer",
    "swa_layers",
    "local_attention",
};

/// The text model's object: `text_config` when the config nests one (Gemma3Config, Llama4Config),
/// else the config itself. The nested object takes the top level's fields it lacks only for
/// model_type, so that a multimodal config's vision fields never reach the text model.
json text_model_of(const json& j, const std::string& origin) {
  auto it = j.find("text_config");
  if (it == j.end() || it->is_null()) return j;
  if (!it->is_object())
    throw InputError(fmt::format("{}: text_config: must be a JSON object {{...}} (got {})", origin,
                                 describe(*it)));
  json t = *it;
  if (!t.contains("model_type") && j.contains("model_type") && j["model_type"].is_string()) {
    // Gemma3Config's text_config is a Gemma3TextConfig, Llama4Config's a Llama4TextConfig.
    const std::string top = j["model_type"].get<std::string>();
    t["model_type"] = top == "gemma3" ? "gemma3_text" : top == "llama4" ? "llama4_text" : top;
  }
  return t;
}

/// A layer-count-long list field: an array of exactly n_layer entries.
const json& layer_list_field(const json& j, const char* field, std::uint64_t n_layer,
                             const std::string& origin) {
  const json& v = j.at(field);
  if (!v.is_array() || v.size() != n_layer)
    throw InputError(fmt::format("{}: {}: must be a list of num_hidden_layers = {} entries (got {})",
                                 origin, field, n_layer,
                                 v.is_array() ? fmt::format("{} entries", v.size()) : describe(v)));
  return v;
}

/// The window of a sliding layer: sliding_window, required once a layer slides.
std::uint64_t window_of(const json& j, const std::string& origin, const char* because) {
  auto w = optional_size(j, origin, {"sliding_window"});
  if (!w)
    throw InputError(fmt::format("{}: sliding_window: missing, but {} names sliding layers (a "
                                 "positive integer is required)", origin, because));
  return *w;
}

/// Fills m.layers (and m.warnings for layout kvlab does not read). Rules, first that applies:
///  1. hybrid_override_pattern (NemotronHConfig): one character per layer, '*' attention,
///     'M' Mamba-2, '-' MLP, 'E' mixture-of-experts MLP.
///  2. layer_types (the list transformers' config classes build and save, e.g. GptOssConfig,
///     Qwen2Config, Gemma2/3Config, Llama4TextConfig, Qwen3NextConfig): "full_attention",
///     "sliding_attention" (window sliding_window), "chunked_attention" (attention_chunk_size),
///     "linear_attention" / "mamba" / "conv" (no per-token cache).
///  3. By model_type, as the config classes build layer_types when the config has none:
///     gemma2 (Gemma2Config): sliding when (i + 1) % 2 != 0;
///     gemma3 / gemma3_text (Gemma3TextConfig), and any config with sliding_window_pattern or
///       _sliding_window_pattern P (Cohere2Config): sliding when (i + 1) % P != 0 (Gemma 3: P = 6);
///     llama4_text (Llama4TextConfig): no_rope_layers[i] = 1 (RoPE) -> chunked
///       (attention_chunk_size), 0 (NoPE) -> full; without the list, NoPE every
///       no_rope_layer_interval-th layer ((i + 1) % 4 == 0);
///     jamba (JambaConfig): attention when i % attn_layer_period == attn_layer_offset, else Mamba;
///     qwen3_next (Qwen3NextConfig): full when (i + 1) % full_attention_interval == 0, else linear
///       attention (Gated DeltaNet);
///     use_sliding_window present (Qwen2Config, Qwen3Config, Qwen2MoeConfig): sliding when
///       use_sliding_window and i >= max_window_layers, else full;
///     attention-free model_types (MambaConfig, Mamba2Config, ...): every layer none.
///  4. Otherwise sliding_window (MistralConfig, Starcoder2Config, Phi3Config, MixtralConfig): the
///     window on every layer; no sliding_window: every layer full.
void read_layer_layout(const json& j, const std::string& origin, ModelSpec& m) {
  const std::uint64_t n = m.n_layer;
  const std::string& type = m.model_type;
  m.layers.assign(n, LayerSpec{});
  const auto none = [](const char* mixer) { return LayerSpec{LayerAttention::none, 0, mixer}; };

  if (auto it = j.find("hybrid_override_pattern"); it != j.end() && !it->is_null()) {
    if (!it->is_string() || it->get<std::string>().size() != n)
      throw InputError(fmt::format("{}: hybrid_override_pattern: must be a string of "
                                   "num_hidden_layers = {} characters from *, M, -, E (got {})",
                                   origin, n, describe(*it)));
    const std::string p = it->get<std::string>();
    for (std::uint64_t i = 0; i < n; ++i) {
      switch (p[i]) {
        case '*': m.layers[i] = LayerSpec{}; break;
        case 'M': m.layers[i] = none("mamba"); break;
        case '-': m.layers[i] = none("mlp"); break;
        case 'E': m.layers[i] = none("moe"); break;
        default:
          throw InputError(fmt::format("{}: hybrid_override_pattern: character {} is '{}'; "
                                       "allowed: * (attention), M (Mamba), - (MLP), E (MoE)",
                                       origin, i, printable(std::string(1, p[i]))));
      }
    }
    return;
  }

  // NemotronHConfig (transformers >= 5) names the same list layers_block_type.
  if (auto it = j.find("layers_block_type"); it != j.end() && !it->is_null()) {
    const json& types = layer_list_field(j, "layers_block_type", n, origin);
    for (std::uint64_t i = 0; i < n; ++i) {
      const std::string s = types[i].is_string() ? types[i].get<std::string>() : std::string();
      if (s == "attention" || s == "full_attention") {
        m.layers[i] = LayerSpec{};
      } else if (s == "mamba" || s == "mlp" || s == "moe" || s == "linear_attention") {
        m.layers[i] = LayerSpec{LayerAttention::none, 0, s};
      } else {
        m.layers[i] = LayerSpec{};
        m.warnings.push_back(fmt::format(
            "layers_block_type[{}] = {}: a block kind kvlab does not interpret; counted as full "
            "attention", i, printable(types[i].dump(), 40)));
      }
    }
    return;
  }

  if (auto it = j.find("layer_types"); it != j.end() && !it->is_null()) {
    const json& types = layer_list_field(j, "layer_types", n, origin);
    for (std::uint64_t i = 0; i < n; ++i) {
      const json& t = types[i];
      const std::string s = t.is_string() ? t.get<std::string>() : std::string();
      if (s == "full_attention" || s == "attention") {
        m.layers[i] = LayerSpec{};
      } else if (s == "sliding_attention") {
        m.layers[i] = {LayerAttention::sliding, window_of(j, origin, "layer_types"), "attention"};
      } else if (s == "chunked_attention") {
        auto c = optional_size(j, origin, {"attention_chunk_size"});
        if (!c)
          throw InputError(fmt::format("{}: attention_chunk_size: missing, but layer_types names "
                                       "chunked layers (a positive integer is required)", origin));
        m.layers[i] = {LayerAttention::chunked, *c, "attention"};
      } else if (s == "linear_attention" || s == "mamba" || s == "conv" || s == "mlp" ||
                 s == "moe") {
        m.layers[i] = LayerSpec{LayerAttention::none, 0, s};
      } else {
        m.layers[i] = LayerSpec{};
        m.warnings.push_back(fmt::format(
            "layer_types[{}] = {}: a layer kind kvlab does not interpret; counted as full attention",
            i, printable(t.dump(), 40)));
      }
    }
    return;
  }

  std::optional<std::uint64_t> pattern =
      optional_size(j, origin, {"sliding_window_pattern", "_sliding_window_pattern"});
  if (!pattern && (type == "gemma3" || type == "gemma3_text")) pattern = 6;  // Gemma3TextConfig
  if (type == "gemma2" && !pattern) pattern = 2;                               // Gemma2Config
  if (pattern) {
    const auto w = optional_size(j, origin, {"sliding_window"});
    for (std::uint64_t i = 0; i < n; ++i)
      if (w && (i + 1) % *pattern != 0) m.layers[i] = {LayerAttention::sliding, *w, "attention"};
    return;
  }
  if (type == "llama4_text" || type == "llama4") {
    const auto chunk = optional_size(j, origin, {"attention_chunk_size"});
    std::vector<bool> rope(n);
    if (auto it = j.find("no_rope_layers"); it != j.end() && !it->is_null() &&
                                            !(it->is_array() && it->empty())) {
      const json& list = layer_list_field(j, "no_rope_layers", n, origin);
      for (std::uint64_t i = 0; i < n; ++i) rope[i] = list[i] == 1 || list[i] == true;
    } else {
      const std::uint64_t every = optional_size(j, origin, {"no_rope_layer_interval"}).value_or(4);
      for (std::uint64_t i = 0; i < n; ++i) rope[i] = (i + 1) % every != 0;
    }
    for (std::uint64_t i = 0; i < n; ++i)
      if (chunk && rope[i]) m.layers[i] = {LayerAttention::chunked, *chunk, "attention"};
    return;
  }
  if (type == "jamba" || j.contains("attn_layer_period")) {
    const std::uint64_t period = optional_size(j, origin, {"attn_layer_period"}).value_or(8);
    std::uint64_t offset = 4;
    if (auto it = j.find("attn_layer_offset"); it != j.end() && !it->is_null())
      offset = as_integer(*it, origin, "attn_layer_offset", 0, period - 1);
    for (std::uint64_t i = 0; i < n; ++i)
      if (i % period != offset) m.layers[i] = none("mamba");
    return;
  }
  if (type == "qwen3_next" || j.contains("full_attention_interval")) {
    const std::uint64_t every = optional_size(j, origin, {"full_attention_interval"}).value_or(4);
    for (std::uint64_t i = 0; i < n; ++i)
      if ((i + 1) % every != 0) m.layers[i] = none("linear_attention");
    return;
  }
  if (attention_free_type(type)) {
    for (auto& l : m.layers) l = none("mamba");
    return;
  }
  if (j.contains("use_sliding_window")) {  // Qwen2Config and its family
    const bool use = optional_bool(j, origin, "use_sliding_window").value_or(false);
    const auto w = optional_size(j, origin, {"sliding_window"});
    if (use && w) {
      std::uint64_t from = 28;  // Qwen2Config's default max_window_layers
      if (auto it = j.find("max_window_layers"); it != j.end() && !it->is_null())
        from = as_integer(*it, origin, "max_window_layers", 0, kMaxConfigLayers);
      for (std::uint64_t i = from; i < n; ++i)
        m.layers[i] = {LayerAttention::sliding, *w, "attention"};
    }
    return;
  }
  if (const auto w = optional_size(j, origin, {"sliding_window"}))
    for (auto& l : m.layers) l = {LayerAttention::sliding, *w, "attention"};
}

/// Mamba's fixed per-sequence state per layer, from transformers' MambaCache: conv_states
/// [intermediate, conv_kernel] and ssm_states [intermediate, state_size], intermediate =
/// expand · hidden_size (MambaConfig; JambaConfig's mamba_expand, mamba_d_conv, mamba_d_state).
void read_state_size(const json& j, const std::string& origin, ModelSpec& m) {
  bool any_mamba = false;
  for (const auto& l : m.layers) any_mamba |= l.mixer == "mamba";
  bool any_free = false;
  for (const auto& l : m.layers) any_free |= l.attention == LayerAttention::none && l.mixer != "mlp" && l.mixer != "moe";
  if (!any_free) return;
  const bool mamba1 = any_mamba && (m.model_type == "mamba" || m.model_type == "falcon_mamba" ||
                                    m.model_type == "jamba");
  if (mamba1) {
    const bool jamba = m.model_type == "jamba";
    const char* expand_f = jamba ? "mamba_expand" : "expand";
    const auto expand = optional_size(j, origin, {expand_f});
    // MambaConfig's names, and those of the original mamba_ssm checkpoints (d_conv, d_state, d_inner).
    const auto conv = jamba ? optional_size(j, origin, {"mamba_d_conv"})
                            : optional_size(j, origin, {"conv_kernel", "d_conv"});
    const auto state = jamba ? optional_size(j, origin, {"mamba_d_state"})
                             : optional_size(j, origin, {"state_size", "d_state"});
    const auto inter = jamba ? std::nullopt : optional_size(j, origin, {"intermediate_size", "d_inner"});
    if (conv && state && (expand || inter)) {
      const std::uint64_t width =
          inter ? *inter : checked_mul(*expand, m.d_model, "Mamba intermediate width");
      m.state_elements_per_layer =
          checked_mul(width, checked_add(*conv, *state, "conv_kernel + state_size"),
                      "Mamba state elements per layer");
      m.state_note = fmt::format("per Mamba layer and sequence: conv state {} × {} + SSM state {} "
                                 "× {} elements (transformers' MambaCache)", width, *conv, width,
                                 *state);
      return;
    }
  }
  m.state_note = "the attention-free layers keep a fixed per-sequence state whose size kvlab does "
                 "not compute for this model_type (it is not part of the KV bytes)";
}
}  // namespace

ModelSpec parse_model_spec(const json& top, const std::string& origin, const std::string& fallback_name) {
  if (!top.is_object())
    throw InputError(fmt::format("{}: must be a JSON object {{...}} (got {})", origin, describe(top)));
  ModelSpec m;
  m.name = optional_string(top, "name").value_or(optional_string(top, "_name_or_path").value_or(fallback_name));
  m.source = optional_string(top, "source").value_or(origin);

  // The text model: a multimodal config nests it in text_config (Gemma3Config, Llama4Config);
  // fields it leaves out take its config class's defaults.
  json j = text_model_of(top, origin);
  if (auto it = j.find("model_type"); it != j.end() && !it->is_null()) {
    if (!it->is_string())
      throw InputError(fmt::format("{}: model_type: must be a string (got {})", origin, describe(*it)));
    m.model_type = printable(it->get<std::string>(), 60);
    if (!known_model_type(m.model_type))
      m.warnings.push_back(fmt::format("model_type '{}' is not one kvlab knows: its layers are read "
                                       "as a plain decoder's, which may not be what it runs",
                                       m.model_type));
  }
  const json defaults = model_type_defaults(m.model_type);
  for (auto it = defaults.begin(); it != defaults.end(); ++it)
    if (!j.contains(it.key())) j[it.key()] = it.value();
  const bool attention_free = attention_free_type(m.model_type);

  std::string layer_field, width_field, head_field;
  m.n_layer = required_size(j, origin, {"num_hidden_layers", "n_layer"}, &layer_field,
                            kMaxConfigLayers);
  m.d_model = required_size(j, origin, {"hidden_size", "n_embd", "d_model"}, &width_field);
  if (attention_free) {
    // MambaConfig and its kin have no attention heads: no K/V, 0 bytes per token.
    m.vocab_size = required_size(j, origin, {"vocab_size"}, &layer_field);
    m.max_position_embeddings = optional_size(j, origin, {"max_position_embeddings", "n_positions"});
    m.intermediate_size = optional_size(j, origin, {"intermediate_size", "n_inner"});
    read_layer_layout(j, origin, m);
    read_state_size(j, origin, m);
    m.num_parameters = optional_size(j, origin, {"num_parameters"}, kMaxConfigCount);
    m.kv_bytes_per_token_16bit = optional_size(j, origin, {"kv_bytes_per_token_16bit"}, kMaxConfigCount);
    return m;
  }
  m.n_head = required_size(j, origin, {"num_attention_heads", "n_head"}, &head_field);
  std::string vocab_field;
  m.vocab_size = required_size(j, origin, {"vocab_size"}, &vocab_field);
  m.max_position_embeddings = optional_size(j, origin, {"max_position_embeddings", "n_positions"});
  m.intermediate_size = optional_size(j, origin, {"intermediate_size", "n_inner"});

  // K/V heads. Falcon's rule (transformers FalconAttention): multi_query without the new decoder
  // architecture means one K/V head; otherwise num_kv_heads (or the Llama name) applies.
  std::string kv_field;
  const json* kv = find_field(j, {"num_key_value_heads", "num_kv_heads", "n_head_kv"}, &kv_field);
  const bool multi_query = optional_bool(j, origin, "multi_query").value_or(false);
  const bool new_arch = optional_bool(j, origin, "new_decoder_architecture").value_or(false);
  // SantaCoder (model_type gpt2 with remote code) names its head layout attention_head_type.
  std::optional<std::string> head_type;
  if (auto it = j.find("attention_head_type"); it != j.end() && !it->is_null()) {
    const std::string t = it->is_string() ? it->get<std::string>() : std::string();
    if (t != "multiquery" && t != "multihead")
      throw InputError(fmt::format("{}: attention_head_type: must be \"multiquery\" or "
                                   "\"multihead\" (got {})", origin, describe(*it)));
    head_type = t;
  }
  if (multi_query && !new_arch) {
    // transformers' FalconAttention: num_kv_heads if new_decoder_architecture or not multi_query,
    // else 1, whatever num_kv_heads says (a re-saved Falcon-7B config carries num_kv_heads = 71);
    // GPTBigCodeAttention: multi_query -> one K/V head.
    if (kv) as_integer(*kv, origin, kv_field, 1, kMaxConfigSize);  // still a valid size
    m.n_kv_head = 1;
    kv_field = "multi_query";
  } else if (head_type == "multiquery") {
    m.n_kv_head = 1;
    kv_field = "attention_head_type";
  } else if (head_type == "multihead") {
    m.n_kv_head = m.n_head;
    kv_field = "attention_head_type";
  } else if (kv) {
    m.n_kv_head = as_integer(*kv, origin, kv_field, 1, kMaxConfigSize);
  } else {
    m.n_kv_head = m.n_head;  // MHA: every config family's default
    kv_field = "num_key_value_heads";
  }
  if (m.n_head % m.n_kv_head != 0)
    throw InputError(fmt::format("{}: {}: must divide {} = {} (got {})", origin, kv_field, head_field,
                                 m.n_head, m.n_kv_head));

  if (auto hd = optional_size(j, origin, {"head_dim", "attention_head_dim"})) {
    m.head_dim = *hd;
  } else {
    if (m.d_model % m.n_head != 0)
      throw InputError(fmt::format("{}: head_dim: not given, and {} = {} is not divisible by {} = {}; "
                                   "add an explicit head_dim", origin, width_field, m.d_model,
                                   head_field, m.n_head));
    m.head_dim = m.d_model / m.n_head;
  }

  m.sliding_window = optional_size(j, origin, {"sliding_window"});
  if (optional_bool(j, origin, "use_sliding_window") == false) m.sliding_window.reset();
  read_layer_layout(j, origin, m);
  read_state_size(j, origin, m);
  for (const char* field : kUninterpretedLayoutFields)
    if (auto it = j.find(field); it != j.end() && !it->is_null())
      m.warnings.push_back(fmt::format("{} = {}: names an attention layout kvlab does not "
                                       "interpret; the totals assume the layers listed", field,
                                       printable(it->dump(), 60)));

  m.kv_lora_rank = optional_size(j, origin, {"kv_lora_rank"});
  m.qk_rope_head_dim = optional_size(j, origin, {"qk_rope_head_dim"});
  m.qk_nope_head_dim = optional_size(j, origin, {"qk_nope_head_dim"});
  m.v_head_dim = optional_size(j, origin, {"v_head_dim"});
  m.q_lora_rank = optional_size(j, origin, {"q_lora_rank"});
  if (m.kv_lora_rank.has_value() != m.qk_rope_head_dim.has_value())
    throw InputError(fmt::format("{}: {}: MLA needs both kv_lora_rank and qk_rope_head_dim (only {} given)",
                                 origin, m.kv_lora_rank ? "qk_rope_head_dim" : "kv_lora_rank",
                                 m.kv_lora_rank ? "kv_lora_rank" : "qk_rope_head_dim"));

  m.num_parameters = optional_size(j, origin, {"num_parameters"}, kMaxConfigCount);
  m.num_parameters_active = optional_size(j, origin, {"num_parameters_active"}, kMaxConfigCount);
  if (m.num_parameters && m.num_parameters_active && *m.num_parameters_active > *m.num_parameters)
    throw InputError(fmt::format("{}: num_parameters_active: must be <= num_parameters = {} (got {})",
                                 origin, *m.num_parameters, *m.num_parameters_active));

  // Mixture of experts: E routed experts per MoE layer, k of them per token. Mixtral and Qwen-MoE
  // call E num_local_experts / num_experts, DeepSeek n_routed_experts; all call k
  // num_experts_per_tok.
  const std::initializer_list<const char*> expert_aliases = {"num_local_experts", "n_routed_experts",
                                                             "num_experts"};
  std::string experts_field;
  m.num_experts = optional_size(j, origin, expert_aliases);
  if (m.num_experts) find_field(j, expert_aliases, &experts_field);
  m.num_experts_per_tok = optional_size(j, origin, {"num_experts_per_tok"});
  if (m.num_experts.has_value() != m.num_experts_per_tok.has_value())
    throw InputError(fmt::format("{}: {}: a mixture of experts needs both {} and num_experts_per_tok "
                                 "(only {} given)", origin,
                                 m.num_experts ? "num_experts_per_tok" : alias_list(expert_aliases),
                                 alias_list(expert_aliases),
                                 m.num_experts ? experts_field : "num_experts_per_tok"));
  if (m.num_experts && *m.num_experts_per_tok > *m.num_experts)
    throw InputError(fmt::format("{}: num_experts_per_tok: must be <= {} = {} (got {})", origin,
                                 experts_field, *m.num_experts, *m.num_experts_per_tok));
  // Shared parameters S = N - E·P_e >= 0 with P_e = (N - N_active) / (E - k) per expert: that is
  // N_active·E >= k·N. Products up to 2^53 · 2^31: compared exactly in 128 bits.
  __extension__ typedef unsigned __int128 u128;
  if (m.num_experts && m.num_parameters && m.num_parameters_active &&
      static_cast<u128>(*m.num_parameters_active) * *m.num_experts <
          static_cast<u128>(*m.num_parameters) * *m.num_experts_per_tok)
    throw InputError(fmt::format(
        "{}: num_parameters_active: must be >= num_parameters × num_experts_per_tok / {} = {} × {} "
        "/ {}, since every token uses its k experts and the shared parameters (got {})",
        origin, experts_field, *m.num_parameters, *m.num_experts_per_tok, *m.num_experts,
        *m.num_parameters_active));
  m.kv_bytes_per_token_16bit = optional_size(j, origin, {"kv_bytes_per_token_16bit"}, kMaxConfigCount);
  return m;
}

ModelSpec parse_model_config(const std::string& text, const std::string& origin,
                             const std::string& fallback_name) {
  return parse_model_spec(parse_object(quote_python_literals(text), origin), origin, fallback_name);
}

ModelSpec read_model_config(const std::string& path) {
  const std::string origin = printable(path);
  return parse_model_config(read_text_file(path), origin, origin);
}

namespace {
// "unknown model 'x' (known: ...)"; when a file of that name is here, how to read it (a file is
// read when the argument has a '/' or ends in .json). The name is not repeated in the advice: it
// may be cut short or hold characters a shell would need quoted.
std::string unknown_name(std::string_view kind, const std::string& name, const std::vector<std::string>& names) {
  std::error_code ec;
  const bool file_here = std::filesystem::is_regular_file(name, ec);
  return fmt::format("unknown {} '{}' (known: {}){}", kind, printable(name, 60), joined(names),
                     file_here ? "; a file of that name is here: put ./ before the name to read it" : "");
}
}  // namespace

std::vector<std::string> model_names() { return stems_in(data_dir() + "/models"); }

ModelSpec load_model(const std::string& name_or_path) {
  const bool is_path = name_or_path.find('/') != std::string::npos ||
                       (name_or_path.size() > 5 && name_or_path.ends_with(".json"));
  if (is_path) return read_model_config(name_or_path);
  const auto names = model_names();
  if (!plausible_name(name_or_path) ||
      std::find(names.begin(), names.end(), name_or_path) == names.end())
    throw InputError(unknown_name("model", name_or_path, names));
  const std::string path = data_dir() + "/models/" + name_or_path + ".json";
  return parse_model_config(read_text_file(path), printable(path), name_or_path);
}

GpuSpec parse_gpu_spec(const json& j, const std::string& origin, const std::string& fallback_name) {
  if (!j.is_object())
    throw InputError(fmt::format("{}: must be a JSON object {{...}} (got {})", origin, describe(j)));
  GpuSpec g;
  g.name = optional_string(j, "name").value_or(fallback_name);
  g.description = optional_string(j, "description").value_or("");
  g.source = optional_string(j, "source").value_or(origin);
  const double memory = positive_real(j, origin, "memory_bytes", true);
  if (memory != std::trunc(memory) || memory > static_cast<double>(kMaxConfigCount))
    throw InputError(fmt::format("{}: memory_bytes: must be a whole number of bytes in [1, 2^53] (got {})",
                                 origin, printable(j.at("memory_bytes").dump(), 60)));
  g.memory_bytes = static_cast<std::uint64_t>(memory);
  g.bandwidth_bytes_per_s = positive_real(j, origin, "bandwidth_bytes_per_s", true);
  g.bf16_flops_per_s = positive_real(j, origin, "bf16_flops_per_s", true);
  g.fp32_flops_per_s = positive_real(j, origin, "fp32_flops_per_s", true);
  bool has_fp8 = false;
  const double fp8 = positive_real(j, origin, "fp8_flops_per_s", false, &has_fp8);
  if (has_fp8) g.fp8_flops_per_s = fp8;
  return g;
}

std::vector<std::string> gpu_names() { return stems_in(data_dir() + "/hardware"); }

std::string local_hardware_path() {
  const char* explicit_path = std::getenv("KVLAB_LOCAL_HARDWARE");
  if (explicit_path && *explicit_path) return explicit_path;
  const char* xdg = std::getenv("XDG_CONFIG_HOME");
  if (xdg && *xdg) return std::string(xdg) + "/kvlab/local.json";
  const char* home = std::getenv("HOME");
  if (home && *home) return std::string(home) + "/.config/kvlab/local.json";
  return "kvlab-local.json";
}

GpuSpec read_gpu_config(const std::string& path) {
  const std::string origin = printable(path);
  return parse_gpu_config(read_text_file(path), origin, origin);
}

GpuSpec load_gpu(const std::string& name) {
  const bool is_path = name.find('/') != std::string::npos || (name.size() > 5 && name.ends_with(".json"));
  if (is_path) return read_gpu_config(name);
  if (name == "local") {
    const std::string path = local_hardware_path();
    std::error_code ec;
    if (!std::filesystem::exists(path, ec))
      throw InputError(fmt::format("GPU 'local': {} does not exist; run `kvlab machine --save` first to "
                                   "measure this machine", printable(path)));
    return parse_gpu_config(read_text_file(path), printable(path), name);
  }
  const auto names = gpu_names();
  if (!plausible_name(name) || std::find(names.begin(), names.end(), name) == names.end())
    throw InputError(unknown_name("GPU", name, names));
  const std::string path = data_dir() + "/hardware/" + name + ".json";
  return parse_gpu_config(read_text_file(path), printable(path), name);
}

GpuSpec parse_gpu_config(const std::string& text, const std::string& origin,
                         const std::string& fallback_name) {
  return parse_gpu_spec(parse_object(text, origin), origin, fallback_name);
}

}  // namespace kvlab

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

#include "core/build_info.hpp"
#include "core/error.hpp"

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
    throw InputError(fmt::format("{}: is a directory; give the path of a config.json file", shown));
  if (st.type() != fs::file_type::regular)
    throw InputError(fmt::format("{}: not a regular file; give the path of a config.json file", shown));
  const auto size = fs::file_size(path, ec);
  if (ec) throw InputError(fmt::format("{}: cannot read: {}", shown, ec.message()));
  if (size > kMaxConfigFileBytes)
    throw InputError(fmt::format("{}: {} bytes is too large for a config.json (limit {} bytes)",
                                 shown, size, kMaxConfigFileBytes));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot open: {}", shown, std::strerror(errno)));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw InputError(fmt::format("{}: read error", shown));
  return text;
}

/// Parses `text` as one JSON object; a syntax error becomes one line with its position.
json parse_object(const std::string& text, const std::string& origin) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    const std::size_t at = std::min<std::size_t>(e.byte == 0 ? 0 : e.byte - 1, text.size());
    std::size_t line = 1, column = 1;
    for (std::size_t i = 0; i < at; ++i) {
      if (text[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    // nlohmann's reason, without its "last read: '...'" echo of the raw input.
    std::string reason = e.what();
    if (auto p = reason.find("; last read"); p != std::string::npos) reason.resize(p);
    if (auto p = reason.rfind(": "); p != std::string::npos) reason = reason.substr(p + 2);
    throw InputError(fmt::format("{}: not valid JSON: {} at line {}, column {} (byte {})", origin,
                                 printable(reason, 100), line, column, e.byte));
  } catch (const json::exception& e) {
    // Valid JSON nlohmann cannot hold: a number beyond a double, e.g. 1e400 (out_of_range.406,
    // found by apps/fuzz; it used to escape as an internal error). It gives no position.
    std::string reason = e.what();
    if (auto p = reason.find("] "); p != std::string::npos) reason = reason.substr(p + 2);
    throw InputError(fmt::format("{}: unreadable JSON: {}", origin, printable(reason, 100)));
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

std::vector<std::string> stems_in(const std::string& folder) {
  std::error_code ec;
  if (!fs::is_directory(folder, ec))
    throw InputError(fmt::format("catalogue folder '{}' not found (set KVLAB_DATA to kvlab's data/)",
                                 printable(folder)));
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    if (entry.path().extension() != ".json") continue;
    const std::string stem = entry.path().stem().string();
    if (plausible_name(stem)) names.push_back(stem);
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

ModelSpec parse_model_spec(const json& j, const std::string& origin, const std::string& fallback_name) {
  if (!j.is_object())
    throw InputError(fmt::format("{}: must be a JSON object {{...}} (got {})", origin, describe(j)));
  ModelSpec m;
  m.name = optional_string(j, "name").value_or(optional_string(j, "_name_or_path").value_or(fallback_name));
  m.source = optional_string(j, "source").value_or(origin);

  std::string layer_field, width_field, head_field;
  m.n_layer = required_size(j, origin, {"num_hidden_layers", "n_layer"}, &layer_field,
                            kMaxConfigLayers);
  m.d_model = required_size(j, origin, {"hidden_size", "n_embd", "d_model"}, &width_field);
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
  if (multi_query && !new_arch) {
    if (kv && as_integer(*kv, origin, kv_field, 1, kMaxConfigSize) != 1)
      throw InputError(fmt::format("{}: {}: multi_query = true means one K/V head, but {} = {}; "
                                   "drop one of them", origin, kv_field, kv_field, kv->dump()));
    m.n_kv_head = 1;
    kv_field = "multi_query";
  } else if (kv) {
    m.n_kv_head = as_integer(*kv, origin, kv_field, 1, kMaxConfigSize);
  } else {
    m.n_kv_head = m.n_head;  // MHA: every config family's default
    kv_field = "num_key_value_heads";
  }
  if (m.n_head % m.n_kv_head != 0)
    throw InputError(fmt::format("{}: {}: must divide {} = {} (got {})", origin, kv_field, head_field,
                                 m.n_head, m.n_kv_head));

  if (auto hd = optional_size(j, origin, {"head_dim"})) {
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
  return parse_model_spec(parse_object(text, origin), origin, fallback_name);
}

ModelSpec read_model_config(const std::string& path) {
  const std::string origin = printable(path);
  return parse_model_config(read_text_file(path), origin, origin);
}

std::vector<std::string> model_names() { return stems_in(data_dir() + "/models"); }

ModelSpec load_model(const std::string& name_or_path) {
  const bool is_path = name_or_path.find('/') != std::string::npos ||
                       (name_or_path.size() > 5 && name_or_path.ends_with(".json"));
  if (is_path) return read_model_config(name_or_path);
  const auto names = model_names();
  if (!plausible_name(name_or_path) ||
      std::find(names.begin(), names.end(), name_or_path) == names.end())
    throw InputError(fmt::format("unknown model '{}' (known: {})", printable(name_or_path, 60), joined(names)));
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
    throw InputError(fmt::format("unknown GPU '{}' (known: {})", printable(name, 60), joined(names)));
  const std::string path = data_dir() + "/hardware/" + name + ".json";
  return parse_gpu_config(read_text_file(path), printable(path), name);
}

GpuSpec parse_gpu_config(const std::string& text, const std::string& origin,
                         const std::string& fallback_name) {
  return parse_gpu_spec(parse_object(text, origin), origin, fallback_name);
}

}  // namespace kvlab

// The fuzz contract (see fuzz_entry.hpp): reader, invariants, then the cost functions against
// exact 128-bit arithmetic.
#include "apps/fuzz/fuzz_entry.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <span>
#include <vector>
#include <string>

#include "core/error.hpp"
#include "cost/kv_cache.hpp"
#include "cost/roofline.hpp"
#include "io/catalogue.hpp"
#include "io/safetensors.hpp"
#include "model/weights_io.hpp"

namespace kvlab::fuzz {
namespace {

__extension__ typedef unsigned __int128 u128;  // exact products of up to three 2^31 sizes and more

constexpr u128 kU64Max = static_cast<u128>(~std::uint64_t{0});
// What the fuzz inputs are called; short, so that message-length checks measure the reader.
const std::string kOrigin = "fuzz.json";
const std::string kFallback = "fuzz";

void require(bool ok, const std::string& what) {
  if (!ok) throw ContractViolation(what);
}

/// An InputError message the CLI can print as its one line on stderr.
void check_message(const InputError& e) {
  const std::string msg = e.what();
  require(!msg.empty(), "InputError with an empty message");
  require(msg.size() <= 1000, fmt::format("InputError message of {} bytes", msg.size()));
  for (unsigned char c : msg)
    require(c >= 0x20 && c != 0x7f,
            fmt::format("InputError message with control byte 0x{:02x}: {}", c, msg));
}

/// A name or source the writers print: one line, and valid UTF-8 (the JSON writer throws
/// type_error 316 on anything else, which the CLI reports as an internal error).
void check_text(const std::string& s, const char* field, bool may_be_empty) {
  require(may_be_empty || !s.empty(), fmt::format("{}: empty", field));
  for (unsigned char c : s)
    require(c >= 0x20 && c != 0x7f, fmt::format("{}: control byte 0x{:02x}", field, c));
  try {
    (void)nlohmann::json(s).dump();
  } catch (const nlohmann::json::type_error& e) {
    throw ContractViolation(
        fmt::format("{}: not valid UTF-8, the JSON writer throws: {}", field, e.what()));
  }
}

void check_size(std::uint64_t v, const char* field, std::uint64_t hi = kMaxConfigSize) {
  require(v >= 1 && v <= hi, fmt::format("{} = {} outside [1, {}]", field, v, hi));
}

void check_size(const std::optional<std::uint64_t>& v, const char* field,
                std::uint64_t hi = kMaxConfigSize) {
  if (v) check_size(*v, field, hi);
}

/// `f()` must return `exact` when it fits in 64 bits and throw InputError when it does not.
template <class F>
void check_exact(u128 exact, const char* what, F&& f) {
  std::optional<std::uint64_t> got;
  try {
    got = f();
  } catch (const InputError& e) {
    check_message(e);
    require(exact > kU64Max,
            fmt::format("{}: InputError although the exact value {} fits in 64 bits: {}", what,
                        static_cast<std::uint64_t>(exact), e.what()));
    return;
  }
  require(exact <= kU64Max,
          fmt::format("{}: returned {} although the exact value overflows 64 bits", what, *got));
  require(*got == static_cast<std::uint64_t>(exact),
          fmt::format("{}: returned {}, exact value {}", what, *got,
                      static_cast<std::uint64_t>(exact)));
}

/// A finite positive double, as every roofline output must be.
void check_positive(double v, const char* what) {
  require(std::isfinite(v) && v > 0.0, fmt::format("{} = {} is not finite and positive", what, v));
}

/// A rate of a GpuSpec: finite, in [1, 1e21].
void check_rate(double v, const char* what) {
  require(std::isfinite(v) && v >= 1.0 && v <= 1e21,
          fmt::format("{} = {} outside [1, 1e21]", what, v));
}

/// `lo` <= `v` <= `hi`, up to a relative 1e-9 for the rounding of the MoE formulas.
void check_between(double lo, double v, double hi, const char* what) {
  const double slack = 1e-9 * std::max(std::abs(lo), std::abs(hi));
  require(std::isfinite(v) && v >= lo - slack && v <= hi + slack,
          fmt::format("{} = {} outside [{}, {}]", what, v, lo, hi));
}

/// A decode step (and the compute-bound batch) of `m` on `g`: InputError, or finite numbers.
/// `moe` as the roofline check builds it from the config (num_parameters_active, E, k).
void check_decode(const ModelSpec& m, const GpuSpec& g, double n_params, std::uint64_t batch,
                  std::uint64_t ctx, std::optional<MoeQuery> moe = std::nullopt) {
  DecodeQuery q;
  q.n_params = n_params;
  q.kv.batch = batch;
  q.kv.ctx = ctx;
  q.moe = moe;
  try {
    const DecodeStep s = decode_step(m, g, q);
    // The weights read lie between what one token uses and what the model holds (roofline.hpp).
    const WeightRead& w = s.weights;
    check_positive(w.params_used, "weight_read params_used");
    check_between(w.params_read_low, w.params_read, w.params_read_high, "weight_read params_read");
    check_between(w.params_used, w.params_read, n_params, "weight_read params_read vs N_used, N");
    if (batch == 1)
      require(w.params_read == w.params_used, "weight_read: batch 1 reads other than N_active");
    if (w.model == WeightModel::moe_uniform) {
      require(w.shared_params >= 0.0 && std::isfinite(w.shared_params), "weight_read: S < 0");
      require(w.params_per_expert > 0.0 && std::isfinite(w.params_per_expert),
              "weight_read: P_e <= 0");
      check_between(static_cast<double>(*moe->experts_per_token), w.experts_touched,
                    static_cast<double>(*moe->experts), "weight_read experts_touched");
    }
    check_positive(s.flops, "decode_step flops");
    check_positive(s.bytes, "decode_step bytes");
    check_positive(s.intensity, "decode_step intensity");
    check_positive(s.ridge, "decode_step ridge");
    check_positive(s.time_s, "decode_step time_s");
    check_positive(s.tokens_per_s, "decode_step tokens_per_s");
    const ComputeBoundBatch c = compute_bound_batch(m, g, q);
    check_positive(c.intensity_limit, "compute_bound_batch intensity_limit");
    if (c.reachable) require(c.batch > 0.0, "compute_bound_batch: reachable at batch <= 0");
  } catch (const InputError& e) {
    check_message(e);
  }
}

/// The A100-80GB of data/hardware/a100-80gb.json, for costing fuzzed models.
GpuSpec a100() {
  GpuSpec g;
  g.name = "a100-80gb";
  g.memory_bytes = 80'000'000'000;
  g.bandwidth_bytes_per_s = 2.039e12;
  g.bf16_flops_per_s = 312e12;
  g.fp32_flops_per_s = 19.5e12;
  return g;
}

/// Llama-2-7B as data/models/llama-2-7b.json has it, for costing fuzzed GPUs.
ModelSpec llama_2_7b() {
  ModelSpec m;
  m.name = m.source = "llama-2-7b";
  m.n_layer = 32;
  m.d_model = 4096;
  m.n_head = 32;
  m.n_kv_head = 32;
  m.head_dim = 128;
  m.vocab_size = 32000;
  return m;
}

void check_model(const ModelSpec& m, std::string_view bytes) {
  check_text(m.name, "name", false);
  check_text(m.source, "source", false);
  check_size(m.n_layer, "n_layer", kMaxConfigLayers);
  check_size(m.d_model, "d_model");
  if (m.n_head != 0) {  // 0 only for an attention-free model (checked below)
    check_size(m.n_head, "n_head");
    check_size(m.n_kv_head, "n_kv_head");
    check_size(m.head_dim, "head_dim");
  }
  check_size(m.vocab_size, "vocab_size");
  check_size(m.max_position_embeddings, "max_position_embeddings");
  check_size(m.intermediate_size, "intermediate_size");
  check_size(m.sliding_window, "sliding_window");
  check_size(m.kv_lora_rank, "kv_lora_rank");
  check_size(m.qk_rope_head_dim, "qk_rope_head_dim");
  check_size(m.qk_nope_head_dim, "qk_nope_head_dim");
  check_size(m.v_head_dim, "v_head_dim");
  check_size(m.q_lora_rank, "q_lora_rank");
  check_size(m.num_parameters, "num_parameters", kMaxConfigCount);
  check_size(m.kv_bytes_per_token_16bit, "kv_bytes_per_token_16bit", kMaxConfigCount);
  check_size(m.num_parameters_active, "num_parameters_active", kMaxConfigCount);
  check_size(m.num_experts, "num_experts");
  check_size(m.num_experts_per_tok, "num_experts_per_tok");
  require(m.num_experts.has_value() == m.num_experts_per_tok.has_value(),
          "half of the expert pair");
  if (m.num_experts)
    require(*m.num_experts_per_tok <= *m.num_experts,
            fmt::format("num_experts_per_tok = {} > num_experts = {}", *m.num_experts_per_tok,
                        *m.num_experts));
  if (m.num_parameters && m.num_parameters_active) {
    require(*m.num_parameters_active <= *m.num_parameters,
            "num_parameters_active > num_parameters");
    if (m.num_experts)  // the shared parameters S = N_active - k·P_e are >= 0
      require(static_cast<u128>(*m.num_parameters_active) * *m.num_experts >=
                  static_cast<u128>(*m.num_parameters) * *m.num_experts_per_tok,
              "num_parameters_active < num_parameters * k / E");
  }
  // The layer list: one entry per layer; a window or chunk is a size; an attention-free model
  // (every layer none) has no heads at all.
  require(m.layers.size() == m.n_layer, "layers.size() != n_layer");
  bool any_attention = false;
  for (const auto& l : m.layers) {
    any_attention |= l.attention != LayerAttention::none;
    if (l.attention == LayerAttention::sliding || l.attention == LayerAttention::chunked)
      check_size(std::optional<std::uint64_t>(l.span), "layer window/chunk");
    else
      require(l.span == 0, "a span on a layer without a window or chunk");
  }
  if (m.n_head == 0) {
    require(!any_attention && m.n_kv_head == 0 && m.head_dim == 0,
            "n_head = 0 on a model with attention layers");
    return;
  }
  require(m.n_head % m.n_kv_head == 0,
          fmt::format("n_kv_head = {} does not divide n_head = {}", m.n_kv_head, m.n_head));
  require(m.kv_lora_rank.has_value() == m.qk_rope_head_dim.has_value(), "half of the MLA pair");
  // head_dim may differ from hidden_size / n_head only when the config says so (Gemma 2), names
  // it attention_head_dim (Nemotron-H), nests its text model, or takes a model_type default (Gemma 3).
  // A config holding Python's Infinity / NaN literals is not strict JSON: skip the comparison.
  const nlohmann::json j = nlohmann::json::parse(bytes, nullptr, false);
  if (j.is_discarded() || !j.is_object() || j.contains("text_config") ||
      (j.contains("attention_head_dim") && !j["attention_head_dim"].is_null()) ||
      (j.contains("model_type") && j["model_type"].is_string()))
    return;
  const auto hd = j.find("head_dim");
  if (hd == j.end() || hd->is_null())
    require(static_cast<u128>(m.head_dim) * m.n_head == m.d_model,
            fmt::format(
                "head_dim = {} without an explicit head_dim, but hidden_size / n_head = {} / {}",
                m.head_dim, m.d_model, m.n_head));
}

void check_model_costs(const ModelSpec& m) {
  // Elements one token leaves in one attention layer, and in all of them (kv_cache.hpp); what
  // the layers hold at ctx, counted layer by layer from m.layers (cost/layers.hpp: a window or
  // chunk keeps min(ctx, span) positions, an attention-free layer none).
  const u128 per_layer = m.n_head == 0 ? 0
                         : m.is_mla()  ? static_cast<u128>(*m.kv_lora_rank) + *m.qk_rope_head_dim
                                       : static_cast<u128>(2) * m.n_kv_head * m.head_dim;
  u128 attention_layers = 0;
  const auto held_positions = [&](std::uint64_t ctx) {
    u128 sum = 0;
    for (const auto& l : m.layers) {
      if (l.attention == LayerAttention::none) continue;
      const bool windowed = !m.is_mla() && l.attention != LayerAttention::full;
      sum += windowed ? std::min(ctx, l.span) : ctx;
    }
    return sum;
  };
  for (const auto& l : m.layers) attention_layers += l.attention != LayerAttention::none;
  const u128 elements = per_layer * attention_layers;
  for (CacheDtype d : all_cache_dtypes()) {
    const u128 bits = elements * cache_dtype_bits(d);
    // batch x ctx: one token, and the course's 32 x 8192 (004 §1.4).
    for (const KvQuery q : {KvQuery{1, 1, d, std::nullopt}, KvQuery{32, 8192, d, std::nullopt}}) {
      const u128 total_bits = per_layer * cache_dtype_bits(d) * q.batch * held_positions(q.ctx);
      check_exact(total_bits, "kv_cache_size total_bits", [&] {
        const KvCacheSize s = kv_cache_size(m, q);
        require(s.elements_per_token == static_cast<std::uint64_t>(elements),
                "kv_cache_size elements_per_token");
        require(s.bits_per_token == static_cast<std::uint64_t>(bits),
                "kv_cache_size bits_per_token");
        require(s.total_bytes == static_cast<std::uint64_t>((total_bits + 7) / 8),
                "kv_cache_size total_bytes");
        return s.total_bits;
      });
    }
  }
  check_exact(elements * 2, "kv_bytes_per_token_16bit",
              [&] { return kv_bytes_per_token_16bit(m); });
  // The checks' second route (kv-size --config, roofline): the cache tensor by tensor.
  check_exact(elements, "count_elements(kv_cache_tensors)", [&] {
    return count_elements(kv_cache_tensors(m, KvQuery{1, 1, CacheDtype::bf16, std::nullopt}));
  });
  const u128 per_head = m.is_mla()
                            ? 2 * (static_cast<u128>(*m.kv_lora_rank) + *m.qk_rope_head_dim) +
                                  2 * static_cast<u128>(*m.kv_lora_rank)
                            : 4 * static_cast<u128>(m.head_dim);
  check_exact(per_head * held_positions(8192) * m.n_head, "attention_flops_per_sequence",
              [&] { return attention_flops_per_sequence(m, 8192); });
  const double n_params = m.num_parameters ? static_cast<double>(*m.num_parameters) : 7e9;
  check_decode(m, a100(), n_params, 1, 4096);
  check_decode(m, a100(), n_params, 32, 8192);
  if (m.num_parameters_active) {  // a mixture of experts, as `kvlab roofline --config` costs it
    const MoeQuery moe{static_cast<double>(*m.num_parameters_active), m.num_experts,
                       m.num_experts_per_tok};
    check_decode(m, a100(), n_params, 1, 4096, moe);
    check_decode(m, a100(), n_params, 32, 8192, moe);
  }
}

void check_gpu(const GpuSpec& g) {
  check_text(g.name, "name", false);
  check_text(g.description, "description", true);
  check_text(g.source, "source", false);
  check_size(g.memory_bytes, "memory_bytes", kMaxConfigCount);
  check_rate(g.bandwidth_bytes_per_s, "bandwidth_bytes_per_s");
  check_rate(g.bf16_flops_per_s, "bf16_flops_per_s");
  check_rate(g.fp32_flops_per_s, "fp32_flops_per_s");
  if (g.fp8_flops_per_s) check_rate(*g.fp8_flops_per_s, "fp8_flops_per_s");
  check_positive(ridge_flops_per_byte(g), "ridge_flops_per_byte");
  const ModelSpec m = llama_2_7b();
  check_decode(m, g, 7e9, 1, 4096);
  check_decode(m, g, 7e9, 32, 8192);
}

/// An accepted safetensors file: every tensor's values match its shape and are finite, names are
/// unique and non-empty; writing it again and reading that back gives the same tensors and
/// metadata (each value is exactly representable in its own dtype). When the metadata holds a
/// kvlab.config, the MiniGPT loader either refuses it with an InputError or builds a model that
/// runs a forward pass over up to two tokens.
void check_safetensors(const SafeTensorsFile& f) {
  std::set<std::string> names;
  for (const auto& t : f.tensors) {
    require(!t.name.empty(), "accepted a tensor with an empty name");
    require(names.insert(t.name).second, "accepted a duplicate tensor name");
    require(t.numel() >= 0 && static_cast<std::uint64_t>(t.numel()) == t.values.size(),
            fmt::format("tensor {}: {} values for its shape", t.name, t.values.size()));
    for (double x : t.values) require(std::isfinite(x), "accepted a non-finite value");
  }
  const auto bytes = encode_safetensors(f.tensors, f.metadata);
  const SafeTensorsFile back = parse_safetensors(bytes, "fuzz-rewrite");
  require(back.metadata == f.metadata, "metadata changed through a write and read");
  require(back.tensors.size() == f.tensors.size(), "tensor count changed through a write and read");
  for (const auto& t : f.tensors) {
    const SafeTensor* b = back.find(t.name);
    require(b != nullptr && b->dtype == t.dtype && b->shape == t.shape && b->values == t.values,
            fmt::format("tensor {} changed through a write and read", t.name));
  }
  const auto cfg = f.metadata.find(kConfigMetadataKey);
  if (cfg == f.metadata.end()) return;
  try {
    const ModelConfig c = model_config_from_json(cfg->second, "fuzz");
    const MiniGPT<float> m = gpt_from_tensors<float>(c, f, "fuzz");
    const std::vector<int> ids = {0, c.vocab_size - 1};
    const std::size_t n = std::min<std::size_t>(2, static_cast<std::size_t>(c.block_size));
    auto cache = m.make_cache(CacheKind::prealloc, 2);
    const Mat<float> logits = m.forward(std::span<const int>(ids.data(), n), 0, *cache);
    require(logits.rows() == static_cast<Eigen::Index>(n) && logits.cols() == c.vocab_size, "logits of the wrong shape");
  } catch (const InputError& e) {
    check_message(e);
  }
}

}  // namespace

Outcome safetensors_input(std::string_view bytes) {
  SafeTensorsFile f;
  try {
    f = parse_safetensors(std::span<const unsigned char>(reinterpret_cast<const unsigned char*>(bytes.data()),
                                                         bytes.size()),
                          "fuzz.safetensors");
  } catch (const InputError& e) {
    check_message(e);
    return Outcome::rejected;
  }
  check_safetensors(f);
  return Outcome::accepted;
}

Outcome model_config_input(std::string_view bytes) {
  ModelSpec m;
  try {
    m = parse_model_config(std::string(bytes), kOrigin, kFallback);
  } catch (const InputError& e) {
    check_message(e);
    return Outcome::rejected;
  }
  check_model(m, bytes);
  check_model_costs(m);
  return Outcome::accepted;
}

Outcome gpu_spec_input(std::string_view bytes) {
  GpuSpec g;
  try {
    g = parse_gpu_config(std::string(bytes), kOrigin, kFallback);
  } catch (const InputError& e) {
    check_message(e);
    return Outcome::rejected;
  }
  check_gpu(g);
  return Outcome::accepted;
}

}  // namespace kvlab::fuzz

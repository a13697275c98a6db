// The model and hardware catalogue: data/models/NAME.json (Hugging Face config.json field names)
// and data/hardware/NAME.json (kvlab's own fields; see data/README.md), read and validated.
//
// A model is read from any Hugging Face config.json, not only the catalogue's: the aliases of the
// config families kvlab knows are accepted (GPT-2 n_layer/n_embd/n_head/n_positions, Falcon
// multi_query/num_kv_heads/n_head_kv). Every invalid input is an InputError whose one-line message
// names the file, the field and the allowed values, e.g.
//   "cfg.json: num_key_value_heads: must divide num_attention_heads = 32 (got 5)".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace kvlab {

/// Largest structural size kvlab accepts in a config (widths, heads, vocabulary): 2^31.
inline constexpr std::uint64_t kMaxConfigSize = std::uint64_t{1} << 31;
/// Largest layer count kvlab accepts: 2^16. kv-size and roofline list a cache tensor by tensor
/// (kv_cache_tensors: two per layer), so this bounds that list at 131072 entries; 2^31 layers
/// asked for 2^32 of them, an allocation of 256 GiB (found with apps/fuzz). Real models have at
/// most a few hundred layers (Llama-3.1-405B: 126).
inline constexpr std::uint64_t kMaxConfigLayers = std::uint64_t{1} << 16;
/// Largest count kvlab accepts for parameter and byte totals in a config: 2^53 (exact in a double).
inline constexpr std::uint64_t kMaxConfigCount = std::uint64_t{1} << 53;

/// How one layer mixes tokens, read from the config the way transformers does (lib/cost/layers.hpp
/// groups them): full causal attention, a sliding window, chunked attention, or no per-token
/// cache at all (Mamba, linear attention, an MLP-only block).
enum class LayerAttention { full, sliding, chunked, none };

/// One layer of a ModelSpec.
struct LayerSpec {
  LayerAttention attention = LayerAttention::full;
  std::uint64_t span = 0;  ///< sliding: window W; chunked: chunk C; 0 otherwise
  /// The config's word for what mixes tokens: "attention" for the three attention kinds, else
  /// e.g. "mamba", "linear_attention", "mlp".
  std::string mixer = "attention";
};

/// The shape of a decoder-only transformer as far as the cost model needs it, validated.
///
/// Invariants (checked when read): n_layer is in [1, 2^16], every other size in [1, 2^31];
/// n_head % n_kv_head == 0; head_dim == d_model / n_head unless the config gives head_dim;
/// kv_lora_rank and qk_rope_head_dim are both present or both absent; num_experts and
/// num_experts_per_tok likewise, with k <= E; num_parameters_active <= num_parameters and, with
/// E and k, num_parameters_active / num_parameters >= k / E (the shared parameters are >= 0);
/// name and source are one line of valid UTF-8 (at most 300 bytes).
struct ModelSpec {
  std::string name;    ///< catalogue name, the config's "_name_or_path", or the file path
  std::string source;  ///< where the numbers come from (the catalogue's "source", or the file path)
  std::uint64_t n_layer = 0;    ///< transformer blocks L (num_hidden_layers | n_layer)
  std::uint64_t d_model = 0;    ///< residual width d (hidden_size | n_embd | d_model)
  std::uint64_t n_head = 0;     ///< query heads H (num_attention_heads | n_head)
  std::uint64_t n_kv_head = 0;  ///< K/V heads: H for MHA, 1 < G < H for GQA, 1 for MQA
  std::uint64_t head_dim = 0;   ///< per-head width (explicit head_dim, else d_model / n_head)
  std::uint64_t vocab_size = 0;
  /// Trained context (max_position_embeddings | n_positions). Optional because real configs omit
  /// it (tiiuae/falcon-7b's config.json has none); kvlab only uses it for a note.
  std::optional<std::uint64_t> max_position_embeddings;
  std::optional<std::uint64_t> intermediate_size;  ///< FFN width (intermediate_size | n_inner)
  /// Attention window; absent when the config has null or use_sliding_window = false.
  std::optional<std::uint64_t> sliding_window;
  /// MLA (DeepSeek-V2/V3, 000 §4.3–4.4): latent width d_c cached per token per layer.
  std::optional<std::uint64_t> kv_lora_rank;
  /// MLA: width d_r of the decoupled RoPE key, shared by all heads, cached beside the latent.
  std::optional<std::uint64_t> qk_rope_head_dim;
  /// MLA: per-head width of the content (non-RoPE) query/key, d_h of 000 §4.3 (optional).
  std::optional<std::uint64_t> qk_nope_head_dim;
  /// MLA: per-head value width (optional).
  std::optional<std::uint64_t> v_head_dim;
  /// MLA: width d_c' of the query latent c^Q (absent: queries come from the hidden state).
  std::optional<std::uint64_t> q_lora_rank;
  std::optional<std::uint64_t> num_parameters;  ///< total parameters (kvlab field; not in HF configs)
  /// Mixture of experts: parameters one token uses, i.e. the shared ones (embeddings, attention,
  /// norms, router, shared experts, dense layers) plus its k routed experts (kvlab field
  /// num_parameters_active; not in HF configs). At most num_parameters.
  std::optional<std::uint64_t> num_parameters_active;
  /// Mixture of experts: routed experts E per MoE layer (num_local_experts | n_routed_experts |
  /// num_experts). Present exactly when num_experts_per_tok is.
  std::optional<std::uint64_t> num_experts;
  /// Mixture of experts: routed experts k each token uses per MoE layer (num_experts_per_tok),
  /// 1 <= k <= E.
  std::optional<std::uint64_t> num_experts_per_tok;
  /// K+V bytes per token over all layers at 2 bytes/element, from data/facts.md: an independent
  /// reference for kvlab's formula (kvlab field; absent from real HF configs).
  std::optional<std::uint64_t> kv_bytes_per_token_16bit;

  /// The config's model_type (of the text model when the config nests one in text_config);
  /// empty when the config has none (kvlab's catalogue files).
  std::string model_type;
  /// One entry per layer (n_layer of them), in order: which layers attend fully, which through a
  /// window or a chunk, which hold no per-token cache. A model whose every layer is `none` (Mamba)
  /// has n_head = n_kv_head = head_dim = 0.
  std::vector<LayerSpec> layers;
  /// Elements of the fixed per-sequence state one attention-free layer keeps (Mamba's conv and SSM
  /// states), when the config gives their sizes; never part of the KV bytes.
  std::optional<std::uint64_t> state_elements_per_layer;
  /// How state_elements_per_layer follows from the config, or why it is absent.
  std::string state_note;
  /// Fields that name attention layout which kvlab does not interpret, an unknown model_type:
  /// one line each. A check reports no PASS on a total built on a config with warnings.
  std::vector<std::string> warnings;

  /// True when at least one layer attends (caches K/V or an MLA latent per token).
  bool has_attention() const {
    for (const auto& l : layers)
      if (l.attention != LayerAttention::none) return true;
    return layers.empty();
  }

  /// True for multi-head latent attention (kv_lora_rank and qk_rope_head_dim present).
  bool is_mla() const { return kv_lora_rank.has_value(); }
  /// True for a mixture of experts whose token uses fewer parameters than the model holds: more
  /// routed experts than a token picks, or num_parameters_active below num_parameters.
  bool is_moe() const {
    return (num_experts && num_experts_per_tok && *num_experts > *num_experts_per_tok) ||
           (num_parameters_active && num_parameters && *num_parameters_active < *num_parameters);
  }
};

/// A GPU as the roofline model needs it (data/hardware/NAME.json), validated: every rate finite
/// and in [1, 1e21] (so ridge and step times stay finite), memory_bytes in [1, 2^53].
struct GpuSpec {
  std::string name;         ///< catalogue name, e.g. "a100-80gb"
  std::string description;  ///< vendor product name (may be empty)
  std::string source;       ///< datasheet
  std::uint64_t memory_bytes = 0;      ///< device memory, decimal bytes (80 GB = 80e9)
  double bandwidth_bytes_per_s = 0.0;  ///< peak HBM/GDDR bandwidth, bytes/s
  double bf16_flops_per_s = 0.0;       ///< dense BF16 tensor rate, FLOP/s
  double fp32_flops_per_s = 0.0;       ///< FP32 non-tensor rate, FLOP/s
  std::optional<double> fp8_flops_per_s;  ///< dense FP8 tensor rate, where the datasheet gives one
};

/// Builds a ModelSpec from a parsed config object. `origin` (a path or "catalogue model 'x'")
/// starts every error message. `fallback_name` is used when the config has neither "name" nor
/// "_name_or_path". Throws InputError naming the field: a missing required field, a wrong JSON
/// type (a string, float or bool where an integer is expected), a size outside [1, 2^31] (the
/// layer count: [1, 2^16]), n_head not divisible by the K/V head count, head_dim absent with
/// hidden_size % n_head != 0, attention_head_type other than multiquery/multihead,
/// half of the MLA pair, half of the expert pair or k > E, num_parameters_active above
/// num_parameters or below k/E of it; a layer list (layer_types, no_rope_layers,
/// hybrid_override_pattern) whose length is not num_hidden_layers or that holds a character or
/// kind it cannot size; a sliding or chunked layer without its sliding_window or
/// attention_chunk_size. The text model of a config with text_config is read from it; fields a
/// config leaves out take transformers' default for its model_type. The layer layout follows
/// transformers' config classes (the rules are listed at read_layer_layout in catalogue.cpp and in
/// docs/design.md); layout fields it does not interpret and an unknown model_type go to
/// ModelSpec::warnings, never to an error.
ModelSpec parse_model_spec(const nlohmann::json& config, const std::string& origin,
                           const std::string& fallback_name);

/// Parses `text`, the bytes of a config.json, exactly as read_model_config and load_model do once
/// they have read the file: one JSON object, then parse_model_spec(object, origin, fallback_name).
/// Throws InputError for malformed JSON (with the byte offset, line and column), a top level that
/// is not an object, and everything parse_model_spec rejects. The one entry point for a config's
/// text, so that the fuzz target (apps/fuzz/) exercises the same path as a file.
ModelSpec parse_model_config(const std::string& text, const std::string& origin,
                             const std::string& fallback_name);

/// Reads and validates a Hugging Face config.json (or a catalogue file) at `path`. Throws
/// InputError, one line, naming the path: missing or unreadable file, a directory or other
/// non-regular file, a file over 16 MiB, malformed JSON (with the byte offset, line and column of
/// the parse error), nesting deeper than kMaxJsonDepth (lib/io/json_read.hpp), a top level that is
/// not an object, and everything parse_model_spec rejects.
ModelSpec read_model_config(const std::string& path);

/// The catalogue's model names (data_dir()/models/*.json stems), sorted.
/// Throws InputError, one line naming KVLAB_DATA when it is set, when the catalogue folder does
/// not exist, cannot be listed or holds no entry.
std::vector<std::string> model_names();

/// A catalogue model by name ("llama-2-7b"), or a config file when the argument contains '/' or
/// ends in ".json". Throws InputError "unknown model 'x' (known: a, b, ...)" for other names, and
/// whatever read_model_config throws.
ModelSpec load_model(const std::string& name_or_path);

/// Builds a GpuSpec from a parsed hardware object; errors start with `origin` and name the field
/// (missing, not a number, not finite or outside [1, 1e21], memory_bytes not an integer).
GpuSpec parse_gpu_spec(const nlohmann::json& hardware, const std::string& origin,
                       const std::string& fallback_name);

/// Parses `text`, the bytes of a data/hardware/NAME.json, exactly as load_gpu does once it has read
/// the file: one JSON object, then parse_gpu_spec(object, origin, fallback_name). Throws InputError
/// for malformed JSON, a top level that is not an object, and everything parse_gpu_spec rejects.
GpuSpec parse_gpu_config(const std::string& text, const std::string& origin,
                         const std::string& fallback_name);

/// The catalogue's GPU names (data_dir()/hardware/*.json stems), sorted; InputError as model_names.
std::vector<std::string> gpu_names();

/// Reads and validates a hardware file at `path` in the data/hardware schema (a student's own GPU).
/// Throws InputError, one line, naming the path: what read_model_config refuses of a file, and
/// everything parse_gpu_spec rejects.
GpuSpec read_gpu_config(const std::string& path);

/// A catalogue GPU by name ("a100-80gb"), or a hardware file when the argument contains '/' or
/// ends in ".json" (read_gpu_config). Throws InputError "unknown GPU 'x' (known: ...)" for an
/// unknown name, and a one-line error for a malformed catalogue file.
/// The name "local" is this machine as `kvlab machine --save` measured it, read from
/// local_hardware_path() (not from the catalogue, which holds datasheet figures only); InputError
/// when that file does not exist yet, saying to run `kvlab machine --save`.
GpuSpec load_gpu(const std::string& name);

/// Where `kvlab machine --save` writes this machine's entry and load_gpu("local") reads it:
/// $KVLAB_LOCAL_HARDWARE when set and non-empty, else $XDG_CONFIG_HOME/kvlab/local.json, else
/// $HOME/.config/kvlab/local.json, else ./kvlab-local.json.
std::string local_hardware_path();

}  // namespace kvlab

// The time one engine step takes, from the roofline cost model (lib/cost/roofline.hpp).
//
// A step runs, in one forward, some prefill chunks (a chunk computes positions [start, start + c)
// of one prompt) and some decodes (one new token per sequence, attending to ctx cached
// positions). Like the roofline of a decode step (004 §1.5; 000 §3.1):
//   FLOPs = 2·N·(Σ c + D)                                 every weight, once per token
//         + a·(Σ_chunks (c·start + c(c+1)/2) + Σ_decodes ctx)   attention: a = 4·L·H·head_dim per
//           (query, key) pair (MLA: the absorbed form), causal within a chunk
//   bytes = N·bytes/param (the weights, read once for the whole step)
//         + kv·(Σ_chunks start + Σ_decodes ctx)           the cached K/V the step reads
//   time  = max(FLOPs / peak, bytes / bandwidth)          one roofline for the mixed step
// The mixed step takes the max of the two times, not their sum: prefill and decode tokens share
// one forward (Sarathi-Serve's coalesced batch, arXiv 2403.02310 §4), so compute and memory
// traffic overlap. A prefill-only step of a long prompt is compute-bound (000 §3 item 2), a
// decode-only step bandwidth-bound; a decode-only step costs exactly what roofline's
// decode_step gives for the same batch and contexts (the tests compare them). Written K/V, norms,
// softmax and the LM head beyond 2·N are ignored, as in the course. A chunk of 0 tokens adds
// nothing (no FLOPs, no bytes); a step with no work takes 0 s.
#pragma once

#include <cstdint>
#include <vector>

#include "cost/kv_cache.hpp"
#include "io/catalogue.hpp"

namespace kvlab::serve {

/// Positions [start, start + tokens) of one prompt, computed in one step.
struct PrefillChunk {
  std::uint64_t start = 0;   ///< positions already cached for this request
  std::uint64_t tokens = 0;  ///< c, positions this step computes (0: contributes nothing)
};

/// What one step computes.
struct StepWork {
  std::vector<PrefillChunk> prefill;
  std::vector<std::uint64_t> decode_ctx;  ///< per decoding sequence: cached positions it reads
};

/// The roofline of one step. Units in the names.
struct StepTime {
  double flops = 0.0;
  double bytes = 0.0;
  double time_compute_s = 0.0;  ///< FLOPs / peak
  double time_memory_s = 0.0;   ///< bytes / bandwidth
  double time_s = 0.0;          ///< max of the two
};

/// Step costs for one model on one GPU (formulas at the top of this file).
class StepTimeModel {
 public:
  /// `n_params` N (e.g. 7e9) at `bytes_per_param` (2 for bf16), cache of `m` in `cache_dtype`.
  /// Throws InputError for N or bytes/param not finite and positive, and what kv_cache_size
  /// throws for `m`.
  StepTimeModel(const ModelSpec& m, const GpuSpec& g, double n_params, double bytes_per_param,
                CacheDtype cache_dtype = CacheDtype::bf16);

  /// The roofline of one step doing `w` (formulas at the top of this file); all zeros when `w`
  /// has no token to compute (no decodes, only empty chunks). Throws nothing.
  StepTime cost(const StepWork& w) const;

  double attention_flops_per_pair() const { return attn_per_pair_; }  ///< a, FLOP
  double kv_bytes_per_token() const { return kv_per_token_; }         ///< B per cached token
  double weight_bytes() const { return weight_bytes_; }               ///< N·bytes/param
  double params() const { return n_params_; }
  double peak_flops_per_s() const { return peak_; }
  double bandwidth_bytes_per_s() const { return bandwidth_; }

 private:
  double n_params_ = 0, weight_bytes_ = 0, attn_per_pair_ = 0, kv_per_token_ = 0, peak_ = 0,
         bandwidth_ = 0;
};

}  // namespace kvlab::serve

// The roofline of one forward step by hand, from first principles: the oracle the cost checks
// (roofline, chunked-prefill) compare lib/cost and the serving simulator against. Plain
// arithmetic on the model's shape, sharing no code with cost/ (a bug there cannot hide in its
// own reference).
//
//   FLOPs = 2·N·(tokens)                          every weight does one multiply-add per token
//         + f·(positions attended, over layers)   f = FLOPs of one query against one cached
//                                                 position in one layer
//   bytes = N·bytes/param                         the weights, read once per step
//         + k·(positions read, over layers)       k = K/V bytes of one position in one layer
//   time  = max(FLOPs / peak FLOP/s, bytes / bandwidth B/s)
//
// Activations, norms, softmax and the LM head beyond 2·N are left out, as in the course.
// Source: 004 §1.5 (group 5); 000 §3.1, §3.2; 000 §4.3.3 (MLA's absorbed form).
#pragma once

#include <algorithm>

namespace kvlab::reference {

/// FLOPs of one query against one cached position in one layer of multi-head (or grouped)
/// attention: QKᵀ and AV, 2·head_dim each per query head: 4·heads·head_dim.
inline double attention_flops_per_position(double heads, double head_dim) { return 4.0 * heads * head_dim; }

/// The same for MLA in the absorbed form (000 §4.3.3): the score against the latent and the RoPE
/// key, 2·(d_c + d_r), and the output from the latent, 2·d_c, per query head:
/// 2·heads·(d_c + d_r) + 2·heads·d_c.
inline double mla_attention_flops_per_position(double heads, double latent, double rope_dim) {
  return 2.0 * heads * (latent + rope_dim) + 2.0 * heads * latent;
}

/// One step's work: FLOPs and bytes moved.
struct StepWork {
  double flops = 0.0;
  double bytes = 0.0;
};

/// A model as one step's roofline sees it, summed over its layers.
struct StepShape {
  double params = 0.0;            ///< N, parameters every token uses (all of them read)
  double bytes_per_param = 2.0;   ///< 2 for bf16 weights
  double flops_per_token = 0.0;   ///< one query against one cached token, all layers: L·f
  double kv_bytes_per_token = 0.0;  ///< K and V of one token, all layers (the cache's bytes/token)
};

/// One step of a batch that runs `chunk` prompt tokens at positions start .. start + chunk − 1
/// (each sees the positions before it and itself: chunk·start + chunk·(chunk + 1)/2 attended in
/// all) and `decodes` sequences that each decode one token after `ctx` cached tokens (ctx attended
/// each). The weights are read once; the cache reads are the chunk's `start` earlier tokens and
/// each decode's `ctx`:
///   FLOPs = 2·params·(chunk + decodes) + flops_per_token·(chunk·start + chunk·(chunk + 1)/2 + decodes·ctx)
///   bytes = bytes_per_param·params + kv_bytes_per_token·(start + decodes·ctx)
/// Integer-valued inputs below 2^53 give exact sums, so the order of the terms does not matter.
inline StepWork step_work(const StepShape& m, double start, double chunk, double decodes, double ctx) {
  StepWork w;
  w.flops = 2.0 * m.params * (chunk + decodes) +
            m.flops_per_token * (chunk * start + chunk * (chunk + 1.0) / 2.0 + decodes * ctx);
  w.bytes = m.bytes_per_param * m.params + m.kv_bytes_per_token * (start + decodes * ctx);
  return w;
}

/// One decode step of `batch` sequences: `params_used` parameters per token (2·params_used·batch
/// FLOPs), `layer_positions` (layer, position) pairs attended per sequence (ctx·layers when every
/// layer holds every position; fewer with windows), at `flops_per_position` each.
inline double decode_flops(double params_used, double batch, double layer_positions, double flops_per_position) {
  return 2.0 * params_used * batch + batch * layer_positions * flops_per_position;
}

/// The roofline time of a step: max(FLOPs / peak, bytes / bandwidth), seconds.
inline double roofline_seconds(const StepWork& w, double peak_flops_per_s, double bandwidth_bytes_per_s) {
  return std::max(w.flops / peak_flops_per_s, w.bytes / bandwidth_bytes_per_s);
}

}  // namespace kvlab::reference

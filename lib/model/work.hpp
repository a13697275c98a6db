// Work of a MiniGPT forward, counted for the work budget (core/work_budget.hpp): a check or command
// that runs a model a number of times set by its options estimates its time from these counts and
// refuses, before any work, a combination over the budget.
#pragma once

#include "model/config.hpp"

namespace kvlab {

/// FLOPs of one full forward over `tokens` positions of a MiniGPT with config `c` (the training
/// forward's shape, every position's logits): 2 per multiply-add of Q/K/V, the output projection,
/// the 4d MLP and the LM head, plus causal attention's scores and values (4 · T(T+1)/2 · n_head ·
/// head_dim per layer). Embeddings and norms are left out (linear in T·d, small beside these).
double forward_flops(const ModelConfig& c, double tokens);

/// FLOPs of one incremental decode step at context `ctx` (the KV-cached path): one token through
/// every projection, the MLP and the LM head, attending to ctx + 1 positions.
double decode_step_flops(const ModelConfig& c, double ctx);

/// Seconds the reference machine takes for `flops` of MiniGPT forwards (kRefModelFlopsPerSecond),
/// margin included.
double model_seconds(double flops);

/// Bytes of a MiniGPT's float32 weights with config `c`.
double model_bytes_f32(const ModelConfig& c);

}  // namespace kvlab

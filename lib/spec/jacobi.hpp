// Jacobi decoding of a block of n tokens (000 §8.4; Santilli et al., "Accelerating Transformer
// Inference for Translation via Parallel Decoding", arXiv:2305.10427; Fu et al., Lookahead
// Decoding, ICML 2024).
//
// Greedy autoregressive decoding solves the n equations y_i = argmax f(prompt, y_0 .. y_{i−1}),
// i = 0 .. n − 1, one after the other. Jacobi iteration solves them all at once: start from any
// block y^(0), and in iteration t run ONE forward over prompt + y^(t−1) (causal, so the logits at
// position P − 1 + i depend only on the prompt and y_0 .. y_{i−1}) and set every
//   y^(t)_i = argmax logits[P − 1 + i]   (P = prompt length).
// Prefix argument: y^(t)_0 is final after iteration 1 (it depends on the prompt alone); if the
// first t tokens are final after iteration t, token t depends only on them, so it is final after
// iteration t + 1. Hence y^(n) is the greedy output, after at most n iterations, whatever y^(0);
// a fixed point y^(t) = y^(t−1) is reached no later and is detected by one more forward.
#pragma once

#include <functional>
#include <span>
#include <vector>

#include "core/tensor.hpp"
#include "model/gpt.hpp"

namespace kvlab::spec {

/// The update of one Jacobi iteration: from the logits of a forward over prompt + block
/// (shape [P + n, V], float64) to the new block (n token ids). The correct one is jacobi_update.
using JacobiUpdate =
    std::function<std::vector<int>(const Mat<double>& logits, int prompt_len, int n)>;

/// y_i = argmax logits[P − 1 + i] for i = 0 .. n − 1 (the lowest id on ties, as greedy decoding).
/// Throws NonFiniteError (core/finite.hpp) when a row it reads holds a NaN or ±inf.
std::vector<int> jacobi_update(const Mat<double>& logits, int prompt_len, int n);

/// A Jacobi run: every iterate, and when it settled.
struct JacobiRun {
  /// y^(0), y^(1), ... (each n token ids); the last one is the fixed point when `converged`.
  std::vector<std::vector<int>> iterates;
  int forwards = 0;      ///< parallel forwards run (iterations, including the one that detects
                         ///< the fixed point)
  bool converged = false;  ///< y^(t) == y^(t−1) reached within max_iterations
};

/// Runs Jacobi iteration from `init` (n = init.size() >= 1 tokens) after `prompt` (non-empty) until
/// a fixed point or `max_iterations` forwards. Each forward is a full causal forward over
/// prompt + block with a fresh cache. Throws InputError for an empty prompt or block, token ids
/// outside the vocabulary, prompt + block longer than block_size, or max_iterations < 1.
template <class T>
JacobiRun jacobi_decode(const MiniGPT<T>& model, std::span<const int> prompt,
                        std::span<const int> init, int max_iterations,
                        const JacobiUpdate& update = jacobi_update);

}  // namespace kvlab::spec

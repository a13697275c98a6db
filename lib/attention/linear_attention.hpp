// Linear attention as a recurrence (003 part 3; Katharopoulos et al., ICML 2020), optionally with
// a decay γ per step (RetNet-style, the simplest gated linear recurrence / SSM).
//
// One head. Keys and queries pass through the positive feature map φ(x) = elu(x) + 1, so every
// weight below is > 0. With φ in place of exp(q·k), causal attention
//
//   y_t = Σ_{s<=t} γ^{t−s} (φ(q_t)·φ(k_s)) v_s / Σ_{s<=t} γ^{t−s} (φ(q_t)·φ(k_s))
//
// factorises through a fixed-size state, S_t = γ S_{t−1} + φ(k_t) v_tᵀ  [d_k, d_v] and
// z_t = γ z_{t−1} + φ(k_t)  [d_k]:   y_t = (φ(q_t)ᵀ S_t) / (φ(q_t)·z_t).
// The recurrent form (LinearAttention::step) keeps d_k·d_v + d_k numbers whatever t is and does
// 2·d_k·d_v + 2·d_k multiply-adds per token; the parallel form (linear_attention_parallel) builds
// the [T, T] weight matrix, as training does. The two are the same function, up to rounding.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/tensor.hpp"

namespace kvlab {

/// φ(x) = elu(x) + 1 elementwise: x + 1 for x > 0, exp(x) otherwise; always > 0.
Vec<double> linear_attention_feature(const Vec<double>& x);

/// The recurrent form of one linear-attention head. Virtual so that tests can substitute a broken
/// layer (one that keeps every past key, one that forgets the decay) and see a check fail.
class LinearAttention {
 public:
  /// A zero state S [key_dim, value_dim], z [key_dim]. Throws InputError naming "key_dim",
  /// "value_dim" (each in [1, 4096]) or "decay" (in (0, 1]).
  LinearAttention(int key_dim, int value_dim, double decay = 1.0);
  virtual ~LinearAttention() = default;

  /// Consumes token t's q, k [key_dim] and v [value_dim]; returns y_t [value_dim]. Throws
  /// std::invalid_argument on a wrong size.
  virtual Vec<double> step(const Vec<double>& q, const Vec<double>& k, const Vec<double>& v);
  /// Bytes the layer holds for the sequence so far, read off its buffers (elements · 8).
  virtual std::size_t state_bytes() const;
  /// Multiply-adds the last step() performed, counted in its loops (φ is not counted: O(d_k)).
  std::uint64_t last_step_macs() const { return last_macs_; }
  int key_dim() const { return key_dim_; }
  int value_dim() const { return value_dim_; }
  double decay() const { return decay_; }

 protected:
  int key_dim_, value_dim_;
  double decay_;
  Mat<double> s_;  ///< Σ γ^{t−s} φ(k_s) v_sᵀ  [key_dim, value_dim]
  Vec<double> z_;  ///< Σ γ^{t−s} φ(k_s)       [key_dim]
  std::uint64_t last_macs_ = 0;
};

/// The parallel (training) form: Y [T, d_v] from Q, K [T, d_k] and V [T, d_v], through the
/// [T, T] matrix A(t, s) = γ^{t−s} φ(q_t)·φ(k_s) for s <= t (0 above the diagonal):
/// Y = (A V) ./ (A 1). O(T²·(d_k + d_v)). Throws std::invalid_argument on mismatched shapes.
Mat<double> linear_attention_parallel(const Mat<double>& q, const Mat<double>& k, const Mat<double>& v,
                                      double decay = 1.0);

}  // namespace kvlab

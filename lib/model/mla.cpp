#include "model/mla.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "attention/gqa.hpp"
#include "core/error.hpp"
#include "core/rng.hpp"
#include "model/init.hpp"
#include "model/ops.hpp"

namespace kvlab {

void MlaConfig::validate() const {
  constexpr long long kMaxDim = 65536;
  require_range("n_layer", n_layer, 1, kMaxDim);
  require_range("d_model", d_model, 1, kMaxDim);
  require_range("n_head", n_head, 1, kMaxDim);
  require_range("head_dim", head_dim, 1, kMaxDim);
  require_range("kv_lora_rank", kv_lora_rank, 1, kMaxDim);
  require_range("q_lora_rank", q_lora_rank, 0, kMaxDim);
  require_range("rope_head_dim", rope_head_dim, 2, kMaxDim);
  require_range("vocab_size", vocab_size, 1, 1 << 20);
  if (rope_head_dim % 2 != 0)
    throw InputError(fmt::format("rope_head_dim: must be even (RoPE rotates pairs) (got {})", rope_head_dim));
  if (!std::isfinite(rope_theta) || rope_theta <= 1.0)
    throw InputError(fmt::format("rope_theta: must be a finite number > 1 (got {})", rope_theta));
}

template <class T>
MlaAbsorbed<T> absorb(const MlaWeights<T>& w, const MlaConfig& c) {
  const int dh = c.head_dim;
  MlaAbsorbed<T> a;
  for (int i = 0; i < c.n_head; ++i) {
    a.w_qk.push_back(w.w_uq.middleCols(i * dh, dh) * w.w_uk.middleCols(i * dh, dh).transpose());  // [d_q, d_c]
    a.w_ov.push_back(w.w_uv.middleCols(i * dh, dh) * w.w_o.middleRows(i * dh, dh));              // [d_c, D]
  }
  return a;
}

namespace {

/// x W (no bias) through linear(), counting 2·rows·in·out FLOPs and W's elements.
template <class T>
Mat<T> project(const Mat<T>& x, const Mat<T>& W, MlaCounts& n) {
  n.flops += 2ull * static_cast<std::uint64_t>(x.rows()) * static_cast<std::uint64_t>(W.size());
  n.weight_elements += static_cast<std::uint64_t>(W.size());
  return linear(x, W, Vec<T>::Zero(W.cols()).eval());
}

template <class T>
T dot(const T* a, const T* b, int n) {
  T s = 0;
  for (int i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

/// In place: scores[0..n) -> softmax probabilities (max subtracted first).
template <class T>
void softmax(std::vector<T>& scores, int n) {
  T m = -std::numeric_limits<T>::infinity();
  for (int j = 0; j < n; ++j) m = std::max(m, scores[j]);
  T denom = 0;
  for (int j = 0; j < n; ++j) denom += (scores[j] = std::exp(scores[j] - m));
  for (int j = 0; j < n; ++j) scores[j] /= denom;
}

}  // namespace

template <class T>
Mat<T> mla_attention(const Mat<T>& h, const MlaWeights<T>& w, const MlaAbsorbed<T>& absorbed, const MlaConfig& c,
                     MlaPath path, int start_pos, LatentCache<T>& cache, int layer, MlaCounts* counts) {
  const int n_new = static_cast<int>(h.rows()), H = c.n_head, dh = c.head_dim, dc = c.kv_lora_rank,
            dr = c.rope_head_dim;
  MlaCounts n;
  const Mat<T> c_q = c.q_lora_rank > 0 ? project(h, w.w_dq, n) : h;  // [T, d_q]
  Mat<T> q_r = project(c_q, w.w_qr, n);                              // [T, H·d_r]
  apply_rope(q_r, H, dr, start_pos, c.rope_theta);
  const Mat<T> c_kv = project(h, w.w_dkv, n);                        // [T, d_c]
  Mat<T> k_r = project(h, w.w_kr, n);                                // [T, d_r]
  apply_rope(k_r, 1, dr, start_pos, c.rope_theta);
  cache.append(layer, c_kv, k_r);

  const Mat<T> lat = cache.latents(layer);    // [S, d_c]
  const Mat<T> kr = cache.rope_keys(layer);   // [S, d_r]
  const int S = static_cast<int>(lat.rows());
  n.cache_elements += static_cast<std::uint64_t>(S) * static_cast<std::uint64_t>(dc + dr);
  const T scale = T(1) / std::sqrt(T(dh + dr));
  std::vector<T> p(static_cast<std::size_t>(S));
  Mat<T> out;

  if (path == MlaPath::naive) {
    const Mat<T> q_c = project(c_q, w.w_uq, n);  // [T, H·d_h]
    const Mat<T> k_c = project(lat, w.w_uk, n);  // [S, H·d_h]  up-projected every call
    const Mat<T> v = project(lat, w.w_uv, n);    // [S, H·d_h]
    Mat<T> att = Mat<T>::Zero(n_new, H * dh);
    for (int t = 0; t < n_new; ++t) {
      const int visible = start_pos + t + 1;
      for (int i = 0; i < H; ++i) {
        for (int s = 0; s < visible; ++s)
          p[s] = (dot(&q_c(t, i * dh), &k_c(s, i * dh), dh) + dot(&q_r(t, i * dr), &kr(s, 0), dr)) * scale;
        softmax(p, visible);
        for (int s = 0; s < visible; ++s)
          for (int e = 0; e < dh; ++e) att(t, i * dh + e) += p[s] * v(s, i * dh + e);
        n.flops += 2ull * visible * static_cast<std::uint64_t>(dh + dr + dh);
      }
    }
    out = project(att, w.w_o, n);
  } else {
    out = Mat<T>::Zero(n_new, c.d_model);
    for (int i = 0; i < H; ++i) {
      const Mat<T> q_t = project(c_q, absorbed.w_qk[i], n);  // [T, d_c]: c_Q W̃_QK,i
      Mat<T> lat_out = Mat<T>::Zero(n_new, dc);               // [T, d_c]: Σ_s p c_KV(s)
      for (int t = 0; t < n_new; ++t) {
        const int visible = start_pos + t + 1;
        for (int s = 0; s < visible; ++s)
          p[s] = (dot(&q_t(t, 0), &lat(s, 0), dc) + dot(&q_r(t, i * dr), &kr(s, 0), dr)) * scale;
        softmax(p, visible);
        for (int s = 0; s < visible; ++s)
          for (int e = 0; e < dc; ++e) lat_out(t, e) += p[s] * lat(s, e);
        n.flops += 2ull * visible * static_cast<std::uint64_t>(dc + dr + dc);
      }
      out += project(lat_out, absorbed.w_ov[i], n);  // W_UV folded into W_O
    }
  }
  if (counts) {
    counts->flops += n.flops;
    counts->weight_elements += n.weight_elements;
    counts->cache_elements += n.cache_elements;
  }
  return out;
}


template <class T>
MlaGPT<T>::MlaGPT(const MlaConfig& config, std::uint64_t seed) : config_(config) {
  config_.validate();
  const auto& c = config_;
  Rng rng(seed);
  const int D = c.d_model, H = c.n_head, dq = c.query_dim();
  const double std = 0.02, std_residual = 0.02 / std::sqrt(2.0 * c.n_layer);
  wte_ = random_matrix<T>(rng, c.vocab_size, D, std);
  for (int l = 0; l < c.n_layer; ++l) {
    Block b;
    b.ln1_gain = b.ln2_gain = Vec<T>::Ones(D);
    b.ln1_bias = b.ln2_bias = Vec<T>::Zero(D);
    auto& m = b.mla;
    if (c.q_lora_rank > 0) m.w_dq = random_matrix<T>(rng, D, dq, std);
    m.w_uq = random_matrix<T>(rng, dq, H * c.head_dim, std);
    m.w_qr = random_matrix<T>(rng, dq, H * c.rope_head_dim, std);
    m.w_dkv = random_matrix<T>(rng, D, c.kv_lora_rank, std);
    m.w_kr = random_matrix<T>(rng, D, c.rope_head_dim, std);
    m.w_uk = random_matrix<T>(rng, c.kv_lora_rank, H * c.head_dim, std);
    m.w_uv = random_matrix<T>(rng, c.kv_lora_rank, H * c.head_dim, std);
    m.w_o = random_matrix<T>(rng, H * c.head_dim, D, std_residual);
    b.w_fc = random_matrix<T>(rng, D, 4 * D, std);
    b.b_fc = random_vector<T>(rng, 4 * D, std);
    b.w_proj = random_matrix<T>(rng, 4 * D, D, std_residual);
    b.b_proj = random_vector<T>(rng, D, std);
    absorbed_.push_back(absorb(m, c));
    blocks_.push_back(std::move(b));
  }
  lnf_gain_ = Vec<T>::Ones(D);
  lnf_bias_ = Vec<T>::Zero(D);
  w_lm_ = random_matrix<T>(rng, D, c.vocab_size, std);
}

template <class T>
Mat<T> MlaGPT<T>::forward(std::span<const int> tokens, int start_pos, LatentCache<T>& cache, MlaPath path,
                          MlaCounts* counts) const {
  const auto& c = config_;
  if (cache.n_layer() != c.n_layer || cache.latent_dim() != c.kv_lora_rank || cache.rope_dim() != c.rope_head_dim)
    throw std::invalid_argument(fmt::format("MlaGPT::forward: cache {} × ({} + {}), model needs {} × ({} + {})",
                                            cache.n_layer(), cache.latent_dim(), cache.rope_dim(), c.n_layer,
                                            c.kv_lora_rank, c.rope_head_dim));
  if (cache.length(0) != start_pos)
    throw std::invalid_argument(fmt::format("MlaGPT::forward: start_pos {} but the cache holds {} positions",
                                            start_pos, cache.length(0)));
  const int n_new = static_cast<int>(tokens.size());
  Mat<T> x(n_new, c.d_model);
  for (int t = 0; t < n_new; ++t) {
    if (tokens[t] < 0 || tokens[t] >= c.vocab_size)
      throw InputError(fmt::format("token: id {} outside [0, {})", tokens[t], c.vocab_size));
    x.row(t) = wte_.row(tokens[t]);
  }
  for (int l = 0; l < c.n_layer; ++l) {
    const Block& b = blocks_[l];
    x += mla_attention(layer_norm(x, b.ln1_gain, b.ln1_bias), b.mla, absorbed_[l], c, path, start_pos, cache, l,
                       counts);
    Mat<T> m = linear(layer_norm(x, b.ln2_gain, b.ln2_bias), b.w_fc, b.b_fc);
    gelu_inplace(m);
    x += linear(m, b.w_proj, b.b_proj);
  }
  return linear(layer_norm(x, lnf_gain_, lnf_bias_), w_lm_, Vec<T>::Zero(c.vocab_size).eval());
}

template MlaAbsorbed<double> absorb(const MlaWeights<double>&, const MlaConfig&);
template MlaAbsorbed<float> absorb(const MlaWeights<float>&, const MlaConfig&);
template Mat<double> mla_attention(const Mat<double>&, const MlaWeights<double>&, const MlaAbsorbed<double>&,
                                   const MlaConfig&, MlaPath, int, LatentCache<double>&, int, MlaCounts*);
template Mat<float> mla_attention(const Mat<float>&, const MlaWeights<float>&, const MlaAbsorbed<float>&,
                                  const MlaConfig&, MlaPath, int, LatentCache<float>&, int, MlaCounts*);
template class MlaGPT<double>;
template class MlaGPT<float>;

}  // namespace kvlab

#include "model/masked_forward.hpp"

#include <stdexcept>

#include <fmt/format.h>

#include "attention/gqa.hpp"
#include "core/error.hpp"
#include "model/ops.hpp"

namespace kvlab {

template <class T>
Mat<T> forward_masked(const MiniGPT<T>& model, std::span<const int> tokens,
                      std::span<const int> positions, const AttentionMask& mask, KVCache<T>& cache) {
  const auto& c = model.config();
  const auto& w = model.weights();
  const int n_new = static_cast<int>(tokens.size());
  const int n_old = cache.length(0);
  if (cache.n_layer() != c.n_layer || cache.width() != c.kv_width())
    throw std::invalid_argument(fmt::format("forward_masked: cache has {} layers of width {}, model needs {} of {}",
                                            cache.n_layer(), cache.width(), c.n_layer, c.kv_width()));
  if (static_cast<int>(positions.size()) != n_new)
    throw std::invalid_argument(fmt::format("forward_masked: {} positions for {} tokens",
                                            positions.size(), n_new));
  if (mask.rows != n_new || mask.cols != n_old + n_new)
    throw std::invalid_argument(fmt::format("forward_masked: mask [{}, {}], needs [{}, {}]", mask.rows,
                                            mask.cols, n_new, n_old + n_new));

  Mat<T> x(n_new, c.d_model);
  for (int t = 0; t < n_new; ++t) {
    if (tokens[t] < 0 || tokens[t] >= c.vocab_size)
      throw InputError(fmt::format("token: id {} outside [0, {})", tokens[t], c.vocab_size));
    const int pos = positions[t];
    if (pos < 0 || (c.positional == Positional::learned && pos >= c.block_size))
      throw InputError(fmt::format("position {}: outside [0, {}) of the learned position table",
                                   pos, c.block_size));
    x.row(t) = w.wte.row(tokens[t]);
    if (c.positional == Positional::learned) x.row(t) += w.wpe.row(pos);
  }
  // RoPE rotates each row by its own position: a one-row apply_rope per token gives the angles
  // MiniGPT::forward computes for that position.
  auto rope_rows = [&](Mat<T>& m, int heads) {
    for (int t = 0; t < n_new; ++t) {
      Mat<T> one = m.row(t);
      apply_rope(one, heads, c.head_dim, positions[t], c.rope_theta);
      m.row(t) = one;
    }
  };

  for (int l = 0; l < c.n_layer; ++l) {
    const auto& b = w.blocks[static_cast<std::size_t>(l)];
    const Mat<T> h = layer_norm(x, b.ln1_gain, b.ln1_bias);
    Mat<T> q = linear(h, b.w_q, b.b_q);
    Mat<T> k = linear(h, b.w_k, b.b_k);
    const Mat<T> v = linear(h, b.w_v, b.b_v);
    if (c.positional == Positional::rope) {
      rope_rows(q, c.n_head);
      rope_rows(k, c.n_kv_head);
    }
    cache.append(l, k, v);
    const Mat<T> att = masked_attention(q, cache.keys(l), cache.values(l), c.n_head, c.n_kv_head,
                                        c.head_dim, mask);
    x += linear(att, b.w_o, b.b_o);
    x = mlp_sublayer(b, x);
  }
  const Mat<T> hf = layer_norm(x, w.lnf_gain, w.lnf_bias);
  Mat<T> logits = linear(hf, w.w_lm, Vec<T>::Zero(c.vocab_size).eval());
  require_finite_forward(model, logits, "logits");  // a NaN anywhere above reaches the logits
  return logits;
}

template Mat<double> forward_masked<double>(const MiniGPT<double>&, std::span<const int>,
                                            std::span<const int>, const AttentionMask&,
                                            KVCache<double>&);
template Mat<float> forward_masked<float>(const MiniGPT<float>&, std::span<const int>,
                                          std::span<const int>, const AttentionMask&,
                                          KVCache<float>&);

}  // namespace kvlab

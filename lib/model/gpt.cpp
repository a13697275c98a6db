#include "model/gpt.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include <fmt/format.h>

#include "attention/gqa.hpp"
#include "attention/window.hpp"
#include "core/error.hpp"
#include "core/rng.hpp"
#include "model/init.hpp"
#include "model/ops.hpp"

namespace kvlab {

template <class T>
MiniGPT<T>::MiniGPT(const ModelConfig& config, std::uint64_t seed) : config_(config) {
  config_.validate();
  Rng rng(seed);
  const int d = config_.d_model, q_w = config_.n_head * config_.head_dim, kv_w = config_.kv_width();
  const double std = 0.02, std_residual = 0.02 / std::sqrt(2.0 * config_.n_layer);
  auto& w = weights_;
  w.wte = random_matrix<T>(rng, config_.vocab_size, d, std);
  if (config_.positional == Positional::learned) w.wpe = random_matrix<T>(rng, config_.block_size, d, std);
  for (int l = 0; l < config_.n_layer; ++l) {
    BlockWeights<T> b;
    b.ln1_gain = Vec<T>::Ones(d);
    b.ln1_bias = Vec<T>::Zero(d);
    b.w_q = random_matrix<T>(rng, d, q_w, std);
    b.b_q = random_vector<T>(rng, q_w, std);
    if (l % config_.cla_share == 0) {  // CLA: only the first layer of a group owns K/V weights
      b.w_k = random_matrix<T>(rng, d, kv_w, std);
      b.b_k = random_vector<T>(rng, kv_w, std);
      b.w_v = random_matrix<T>(rng, d, kv_w, std);
      b.b_v = random_vector<T>(rng, kv_w, std);
    }
    b.w_o = random_matrix<T>(rng, q_w, d, std_residual);
    b.b_o = random_vector<T>(rng, d, std);
    b.ln2_gain = Vec<T>::Ones(d);
    b.ln2_bias = Vec<T>::Zero(d);
    b.w_fc = random_matrix<T>(rng, d, 4 * d, std);
    b.b_fc = random_vector<T>(rng, 4 * d, std);
    b.w_proj = random_matrix<T>(rng, 4 * d, d, std_residual);
    b.b_proj = random_vector<T>(rng, d, std);
    w.blocks.push_back(std::move(b));
  }
  w.lnf_gain = Vec<T>::Ones(d);
  w.lnf_bias = Vec<T>::Zero(d);
  w.w_lm = random_matrix<T>(rng, d, config_.vocab_size, std);
}

namespace {

/// Throws InputError "weights: NAME: shape [r, c], config needs [R, C]" unless m is rows x cols.
template <class M>
void require_shape(const M& m, Eigen::Index rows, Eigen::Index cols, const std::string& name, bool is_vector) {
  const bool ok = is_vector ? m.size() == rows : (m.rows() == rows && m.cols() == cols);
  if (ok) return;
  if (is_vector)
    throw InputError(fmt::format("weights: {}: shape [{}], config needs [{}]", name, m.size(), rows));
  throw InputError(fmt::format("weights: {}: shape [{}, {}], config needs [{}, {}]", name, m.rows(), m.cols(), rows,
                               cols));
}

}  // namespace

template <class T>
MiniGPT<T>::MiniGPT(const ModelConfig& config, GptWeights<T> weights) : config_(config), weights_(std::move(weights)) {
  config_.validate();
  const int d = config_.d_model, q_w = config_.n_head * config_.head_dim, kv_w = config_.kv_width();
  const auto& w = weights_;
  const auto mat = [](const Mat<T>& m, int r, int c, const std::string& n) { require_shape(m, r, c, n, false); };
  const auto vec = [](const Vec<T>& v, int r, const std::string& n) { require_shape(v, r, 1, n, true); };
  mat(w.wte, config_.vocab_size, d, "wte");
  if (config_.positional == Positional::learned) mat(w.wpe, config_.block_size, d, "wpe");
  else mat(w.wpe, 0, 0, "wpe (RoPE: none)");
  if (static_cast<int>(w.blocks.size()) != config_.n_layer)
    throw InputError(fmt::format("weights: {} blocks, config needs n_layer = {}", w.blocks.size(), config_.n_layer));
  for (int l = 0; l < config_.n_layer; ++l) {
    const auto& b = w.blocks[static_cast<std::size_t>(l)];
    const auto n = [l](const char* f) { return fmt::format("blocks[{}].{}", l, f); };
    const bool owns_kv = l % config_.cla_share == 0;
    vec(b.ln1_gain, d, n("ln1_gain"));
    vec(b.ln1_bias, d, n("ln1_bias"));
    mat(b.w_q, d, q_w, n("w_q"));
    vec(b.b_q, q_w, n("b_q"));
    mat(b.w_k, owns_kv ? d : 0, owns_kv ? kv_w : 0, n("w_k"));
    vec(b.b_k, owns_kv ? kv_w : 0, n("b_k"));
    mat(b.w_v, owns_kv ? d : 0, owns_kv ? kv_w : 0, n("w_v"));
    vec(b.b_v, owns_kv ? kv_w : 0, n("b_v"));
    mat(b.w_o, q_w, d, n("w_o"));
    vec(b.b_o, d, n("b_o"));
    vec(b.ln2_gain, d, n("ln2_gain"));
    vec(b.ln2_bias, d, n("ln2_bias"));
    mat(b.w_fc, d, 4 * d, n("w_fc"));
    vec(b.b_fc, 4 * d, n("b_fc"));
    mat(b.w_proj, 4 * d, d, n("w_proj"));
    vec(b.b_proj, d, n("b_proj"));
  }
  vec(w.lnf_gain, d, "lnf_gain");
  vec(w.lnf_bias, d, "lnf_bias");
  mat(w.w_lm, d, config_.vocab_size, "w_lm");
}

template <class T>
Mat<T> MiniGPT<T>::forward(std::span<const int> tokens, int start_pos, KVCache<T>& cache) const {
  const auto& c = config_;
  const int n_new = static_cast<int>(tokens.size());
  if (cache.n_layer() != c.n_kv_layer() || cache.width() != c.kv_width())
    throw std::invalid_argument(fmt::format("forward: cache has {} layers of width {}, model needs {} of {}",
                                            cache.n_layer(), cache.width(), c.n_kv_layer(), c.kv_width()));
  // A cache that keeps everything holds 0 .. start_pos - 1; a rolling one (sliding window) the
  // newest of them, from first_position on, which must still cover the window of the first query.
  const int first = cache.first_position(0), held = cache.length(0);
  if (first + held != start_pos)
    throw std::invalid_argument(fmt::format("forward: start_pos {} but the cache holds {} positions from {}",
                                            start_pos, held, first));
  const int window = c.sliding_window;
  if (first > (window > 0 ? std::max(0, start_pos - window + 1) : 0))
    throw std::invalid_argument(fmt::format("forward: the cache dropped positions before {} that the {} needs",
                                            first, window > 0 ? "window" : "full attention"));
  if (c.positional == Positional::learned && start_pos + n_new > c.block_size)
    throw InputError(fmt::format("positions {}..{}: exceed block_size = {} of the learned position table",
                                 start_pos, start_pos + n_new - 1, c.block_size));

  Mat<T> x(n_new, c.d_model);
  for (int t = 0; t < n_new; ++t) {
    if (tokens[t] < 0 || tokens[t] >= c.vocab_size)
      throw InputError(fmt::format("token: id {} outside [0, {})", tokens[t], c.vocab_size));
    x.row(t) = weights_.wte.row(tokens[t]);
    if (c.positional == Positional::learned) x.row(t) += weights_.wpe.row(start_pos + t);  // 004 §3.2
  }

  // Sliding window: the keys a chunk sees (held positions still in the window of its first query,
  // then its own), gathered before the append, since a rolling cache may overwrite them.
  Mat<T> window_k, window_v;
  int window_k_pos0 = 0;
  for (int l = 0; l < c.n_layer; ++l) {
    const auto& b = weights_.blocks[l];
    const int kl = c.kv_layer(l);                   // CLA: the group's cache layer
    const bool owns_kv = l % c.cla_share == 0;      // its first layer computes K/V from its input
    const Mat<T> h = layer_norm(x, b.ln1_gain, b.ln1_bias);
    Mat<T> q = linear(h, b.w_q, b.b_q);
    if (c.positional == Positional::rope) apply_rope(q, c.n_head, c.head_dim, start_pos, c.rope_theta);
    if (owns_kv) {
      Mat<T> k = linear(h, b.w_k, b.b_k);
      const Mat<T> v = linear(h, b.w_v, b.b_v);
      if (c.positional == Positional::rope) apply_rope(k, c.n_kv_head, c.head_dim, start_pos, c.rope_theta);
      if (window > 0) {
        const int skip = std::max(0, start_pos - window + 1 - first);  // held rows out of every window
        const auto old_k = cache.keys(kl), old_v = cache.values(kl);
        window_k.resize(held - skip + n_new, c.kv_width());
        window_v.resize(held - skip + n_new, c.kv_width());
        window_k.topRows(held - skip) = old_k.bottomRows(held - skip);
        window_v.topRows(held - skip) = old_v.bottomRows(held - skip);
        window_k.bottomRows(n_new) = k;
        window_v.bottomRows(n_new) = v;
        window_k_pos0 = first + skip;
      }
      require_finite_forward(*this, k, "K", l);
      require_finite_forward(*this, v, "V", l);
      cache.append(kl, k, v);
    }
    const Mat<T> att =
        window > 0 ? sliding_window_attention<T>(q, ConstMatView<T>(window_k.data(), window_k.rows(), window_k.cols()),
                                                 ConstMatView<T>(window_v.data(), window_v.rows(), window_v.cols()),
                                                 c.n_head, c.n_kv_head, c.head_dim, start_pos, window_k_pos0, window)
                   : grouped_query_attention(q, cache.keys(kl), cache.values(kl), c.n_head, c.n_kv_head, c.head_dim,
                                             start_pos, c.causal);
    x += linear(att, b.w_o, b.b_o);
    x = mlp_sublayer(b, x);
    require_finite_forward(*this, x, "output", l);
  }
  const Mat<T> hf = layer_norm(x, weights_.lnf_gain, weights_.lnf_bias);
  Mat<T> logits = linear(hf, weights_.w_lm, Vec<T>::Zero(c.vocab_size).eval());
  require_finite_forward(*this, logits, "logits");
  return logits;
}

template <class T>
void require_finite_forward(const MiniGPT<T>& model, const Mat<T>& x, const char* what, int layer) {
  if (model.source().empty() || x.allFinite()) return;
  // The error path only: the largest weight, to show the user the scale that overflowed.
  double largest = 0;
  const auto scan = [&largest](const auto& m) {
    if (m.size() > 0) largest = std::max(largest, static_cast<double>(m.cwiseAbs().maxCoeff()));
  };
  const auto& w = model.weights();
  scan(w.wte);
  scan(w.wpe);
  for (const auto& b : w.blocks)
    for (const auto* m : {&b.w_q, &b.w_k, &b.w_v, &b.w_o, &b.w_fc, &b.w_proj}) scan(*m);
  scan(w.w_lm);
  throw InputError(fmt::format("{}: the forward gives non-finite values ({}): the weights overflow {} "
                               "(largest |weight| {:.3g}); kvlab needs a forward that stays finite",
                               model.source(), layer < 0 ? std::string(what) : fmt::format("layer {} {}", layer, what), std::is_same_v<T, double> ? "float64" : "float32", largest));
}

template <class T>
Mat<T> mlp_sublayer(const BlockWeights<T>& b, const Mat<T>& x) {
  Mat<T> m = linear(layer_norm(x, b.ln2_gain, b.ln2_bias), b.w_fc, b.b_fc);
  gelu_inplace(m);
  return x + linear(m, b.w_proj, b.b_proj);
}

template Mat<double> mlp_sublayer(const BlockWeights<double>&, const Mat<double>&);
template Mat<float> mlp_sublayer(const BlockWeights<float>&, const Mat<float>&);
template void require_finite_forward<double>(const MiniGPT<double>&, const Mat<double>&, const char*, int);
template void require_finite_forward<float>(const MiniGPT<float>&, const Mat<float>&, const char*, int);

template <class T>
std::unique_ptr<KVCache<T>> MiniGPT<T>::make_cache(CacheKind kind, int max_len) const {
  return kvlab::make_cache<T>(kind, config_.n_kv_layer(), config_.kv_width(), max_len);
}

template class MiniGPT<double>;
template class MiniGPT<float>;

}  // namespace kvlab

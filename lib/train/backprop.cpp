#include "train/backprop.hpp"

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "core/error.hpp"

namespace kvlab::train {

namespace {

std::string g_broken;  // set_broken_backward_for_test

template <class T>
struct LnCache {
  Mat<T> xhat;  // [T, d]
  Vec<T> rstd;  // [T]
};

template <class T>
Mat<T> ln_forward(const Mat<T>& x, const Vec<T>& gain, const Vec<T>& bias, LnCache<T>* cache) {
  const Eigen::Index n = x.rows(), C = x.cols();
  Mat<T> y(n, C);
  if (cache) {
    cache->xhat.resize(n, C);
    cache->rstd.resize(n);
  }
  for (Eigen::Index t = 0; t < n; ++t) {  // the order of model/ops.cpp's layer_norm
    T mean = 0;
    for (Eigen::Index i = 0; i < C; ++i) mean += x(t, i);
    mean /= T(C);
    T var = 0;
    for (Eigen::Index i = 0; i < C; ++i) var += (x(t, i) - mean) * (x(t, i) - mean);
    var /= T(C);
    const T inv = T(1) / std::sqrt(var + T(1e-5));
    for (Eigen::Index i = 0; i < C; ++i) {
      const T xh = (x(t, i) - mean) * inv;
      y(t, i) = xh * gain(i) + bias(i);
      if (cache) cache->xhat(t, i) = xh;
    }
    if (cache) cache->rstd(t) = inv;
  }
  return y;
}

/// dx from dy; accumulates dgain, dbias.
template <class T>
Mat<T> ln_backward(const Mat<T>& dy, const LnCache<T>& cache, const Vec<T>& gain, Vec<T>& dgain, Vec<T>& dbias) {
  const Eigen::Index n = dy.rows(), C = dy.cols();
  Mat<T> dx(n, C);
  const bool broken = g_broken == "layernorm";
  for (Eigen::Index t = 0; t < n; ++t) {
    T mean_dxh = 0, mean_dxh_xh = 0;
    for (Eigen::Index i = 0; i < C; ++i) {
      const T dxh = dy(t, i) * gain(i);
      mean_dxh += dxh;
      mean_dxh_xh += dxh * cache.xhat(t, i);
      dgain(i) += dy(t, i) * cache.xhat(t, i);
      dbias(i) += dy(t, i);
    }
    mean_dxh /= T(C);
    mean_dxh_xh /= T(C);
    if (broken) mean_dxh_xh = 0;  // drops the variance path
    for (Eigen::Index i = 0; i < C; ++i)
      dx(t, i) = cache.rstd(t) * (dy(t, i) * gain(i) - mean_dxh - cache.xhat(t, i) * mean_dxh_xh);
  }
  return dx;
}

template <class T>
Mat<T> linear_forward(const Mat<T>& x, const Mat<T>& W, const Vec<T>& b) {
  Mat<T> y = x * W;
  y.rowwise() += b.transpose();
  return y;
}

template <class T>
T gelu(T u) {
  return T(0.5) * u * (T(1) + std::erf(u * T(0.70710678118654752440)));
}

template <class T>
T gelu_grad(T u) {
  const T cdf = T(0.5) * (T(1) + std::erf(u * T(0.70710678118654752440)));
  const T pdf = std::exp(T(-0.5) * u * u) * T(0.39894228040143267794);
  return g_broken == "gelu" ? cdf : cdf + u * pdf;
}

template <class T>
struct LayerActs {
  Mat<T> x_in;            // [T, d] block input
  LnCache<T> ln1, ln2;
  Mat<T> h1;              // [T, d]
  Mat<T> q, k, v;         // [T, q_w], [T, kv_w], [T, kv_w]
  std::vector<Mat<T>> P;  // n_head × [T, T] attention weights (causal, zeros above the diagonal)
  Mat<T> a;               // [T, q_w] attention output before Wo
  Mat<T> h2;              // [T, d]
  Mat<T> u;               // [T, 4d] MLP pre-activation
  Mat<T> g;               // [T, 4d] GELU(u)
};

template <class T>
struct Acts {
  std::vector<LayerActs<T>> layers;
  LnCache<T> lnf;
  Mat<T> hf;      // [T, d]
  Mat<T> logits;  // [T, vocab]
};

template <class T>
void forward_impl(const ModelConfig& c, const GptWeights<T>& w, std::span<const int> tokens, Acts<T>& acts) {
  require_trainable(c);
  const int n = static_cast<int>(tokens.size());
  if (n < 1 || n > c.block_size)
    throw InputError(fmt::format("sequence length: must be in [1, {}] (block_size) (got {})", c.block_size, n));
  const int d = c.d_model, hd = c.head_dim, group = c.group_size();
  Mat<T> x(n, d);
  for (int t = 0; t < n; ++t) {
    if (tokens[t] < 0 || tokens[t] >= c.vocab_size)
      throw InputError(fmt::format("token: id {} outside [0, {})", tokens[t], c.vocab_size));
    x.row(t) = w.wte.row(tokens[t]) + w.wpe.row(t);
  }
  const T scale = T(1) / std::sqrt(T(hd));
  acts.layers.resize(c.n_layer);
  for (int l = 0; l < c.n_layer; ++l) {
    const auto& b = w.blocks[l];
    auto& A = acts.layers[l];
    A.x_in = x;
    A.h1 = ln_forward(x, b.ln1_gain, b.ln1_bias, &A.ln1);
    A.q = linear_forward(A.h1, b.w_q, b.b_q);
    A.k = linear_forward(A.h1, b.w_k, b.b_k);
    A.v = linear_forward(A.h1, b.w_v, b.b_v);
    A.a.resize(n, c.n_head * hd);
    A.P.resize(c.n_head);
    for (int h = 0; h < c.n_head; ++h) {
      const int g = h / group;
      Mat<T> S = (A.q.middleCols(h * hd, hd) * A.k.middleCols(g * hd, hd).transpose()) * scale;
      for (int i = 0; i < n; ++i) {
        T mx = -std::numeric_limits<T>::infinity();
        for (int j = 0; j <= i; ++j) mx = std::max(mx, S(i, j));
        T den = 0;
        for (int j = 0; j <= i; ++j) {
          S(i, j) = std::exp(S(i, j) - mx);
          den += S(i, j);
        }
        for (int j = 0; j <= i; ++j) S(i, j) /= den;
        for (int j = i + 1; j < n; ++j) S(i, j) = 0;
      }
      A.a.middleCols(h * hd, hd) = S * A.v.middleCols(g * hd, hd);
      A.P[h] = std::move(S);
    }
    x += linear_forward(A.a, b.w_o, b.b_o);
    A.h2 = ln_forward(x, b.ln2_gain, b.ln2_bias, &A.ln2);
    A.u = linear_forward(A.h2, b.w_fc, b.b_fc);
    A.g = A.u.unaryExpr([](T e) { return gelu(e); });
    x += linear_forward(A.g, b.w_proj, b.b_proj);
  }
  acts.hf = ln_forward(x, w.lnf_gain, w.lnf_bias, &acts.lnf);
  acts.logits = acts.hf * w.w_lm;
}

/// Softmax cross-entropy of each row against targets; returns the sum, turns `logits` into
/// (p - onehot) * scale when `grad`.
template <class T>
double cross_entropy(Mat<T>& logits, std::span<const int> targets, int vocab, T scale, bool grad) {
  double loss = 0;
  for (Eigen::Index t = 0; t < logits.rows(); ++t) {
    const int y = targets[t];
    if (y < 0 || y >= vocab) throw InputError(fmt::format("target: id {} outside [0, {})", y, vocab));
    const T mx = logits.row(t).maxCoeff();
    double den = 0;
    for (int i = 0; i < vocab; ++i) den += std::exp(static_cast<double>(logits(t, i) - mx));
    loss += std::log(den) - static_cast<double>(logits(t, y) - mx);
    if (grad) {
      for (int i = 0; i < vocab; ++i)
        logits(t, i) = static_cast<T>(std::exp(static_cast<double>(logits(t, i) - mx)) / den) * scale;
      logits(t, y) -= scale;
    }
  }
  return loss;
}

}  // namespace

void set_broken_backward_for_test(const std::string& part) { g_broken = part; }

void require_trainable(const ModelConfig& c) {
  c.validate();
  if (c.positional != Positional::learned) throw InputError("positional: the trainer supports learned only");
  if (!c.causal) throw InputError("causal: the trainer supports causal attention only");
  if (c.sliding_window != 0) throw InputError("sliding_window: the trainer supports 0 (off) only");
  if (c.cla_share != 1) throw InputError("cla_share: the trainer supports 1 (no CLA) only");
}

template <class T>
std::vector<ParamRef<T>> param_refs(GptWeights<T>& w) {
  std::vector<ParamRef<T>> out;
  auto add = [&](std::string name, auto& m, bool decay) { out.push_back({std::move(name), m.data(), m.size(), decay}); };
  add("transformer.wte.weight", w.wte, true);
  add("transformer.wpe.weight", w.wpe, true);
  for (std::size_t l = 0; l < w.blocks.size(); ++l) {
    auto& b = w.blocks[l];
    const std::string p = fmt::format("transformer.h.{}.", l);
    add(p + "ln_1.weight", b.ln1_gain, false);
    add(p + "ln_1.bias", b.ln1_bias, false);
    add(p + "attn.q_proj.weight", b.w_q, true);
    add(p + "attn.q_proj.bias", b.b_q, false);
    add(p + "attn.k_proj.weight", b.w_k, true);
    add(p + "attn.k_proj.bias", b.b_k, false);
    add(p + "attn.v_proj.weight", b.w_v, true);
    add(p + "attn.v_proj.bias", b.b_v, false);
    add(p + "attn.out_proj.weight", b.w_o, true);
    add(p + "attn.out_proj.bias", b.b_o, false);
    add(p + "ln_2.weight", b.ln2_gain, false);
    add(p + "ln_2.bias", b.ln2_bias, false);
    add(p + "mlp.c_fc.weight", b.w_fc, true);
    add(p + "mlp.c_fc.bias", b.b_fc, false);
    add(p + "mlp.c_proj.weight", b.w_proj, true);
    add(p + "mlp.c_proj.bias", b.b_proj, false);
  }
  add("transformer.ln_f.weight", w.lnf_gain, false);
  add("transformer.ln_f.bias", w.lnf_bias, false);
  add("lm_head.weight", w.w_lm, true);
  return out;
}

template <class T>
GptWeights<T> zeros_like(const GptWeights<T>& w) {
  GptWeights<T> z = w;
  for (auto& p : param_refs(z)) std::fill(p.data, p.data + p.size, T(0));
  return z;
}

template <class T>
std::size_t param_count(const GptWeights<T>& w) {
  GptWeights<T>& m = const_cast<GptWeights<T>&>(w);  // param_refs only reads the layout here
  std::size_t n = 0;
  for (const auto& p : param_refs(m)) n += static_cast<std::size_t>(p.size);
  return n;
}

template <class T>
Mat<T> train_forward(const ModelConfig& c, const GptWeights<T>& w, std::span<const int> tokens) {
  Acts<T> acts;
  forward_impl(c, w, tokens, acts);
  return acts.logits;
}

template <class T>
double sequence_loss(const ModelConfig& c, const GptWeights<T>& w, std::span<const int> tokens,
                     std::span<const int> targets) {
  if (targets.size() != tokens.size()) throw InputError("targets: must have one per token");
  Acts<T> acts;
  forward_impl(c, w, tokens, acts);
  return cross_entropy(acts.logits, targets, c.vocab_size, T(1), false);
}

template <class T>
double forward_backward(const ModelConfig& c, const GptWeights<T>& w, std::span<const int> tokens,
                        std::span<const int> targets, T grad_scale, GptWeights<T>& grad) {
  if (targets.size() != tokens.size()) throw InputError("targets: must have one per token");
  Acts<T> acts;
  forward_impl(c, w, tokens, acts);
  const double loss = cross_entropy(acts.logits, targets, c.vocab_size, grad_scale, true);
  const Mat<T>& dlogits = acts.logits;
  const int n = static_cast<int>(tokens.size()), hd = c.head_dim, group = c.group_size();
  const T scale = T(1) / std::sqrt(T(hd));

  // LM head and final LayerNorm.
  grad.w_lm.noalias() += acts.hf.transpose() * dlogits;
  Mat<T> dhf = dlogits * w.w_lm.transpose();
  if (g_broken == "head") dhf *= T(0.5);
  Mat<T> dx = ln_backward(dhf, acts.lnf, w.lnf_gain, grad.lnf_gain, grad.lnf_bias);

  for (int l = c.n_layer - 1; l >= 0; --l) {
    const auto& b = w.blocks[l];
    auto& gb = grad.blocks[l];
    const auto& A = acts.layers[l];
    // MLP: x'' = x' + GELU(LN2(x') Wfc + bfc) Wproj + bproj
    gb.w_proj.noalias() += A.g.transpose() * dx;
    gb.b_proj += dx.colwise().sum().transpose();
    Mat<T> du = dx * b.w_proj.transpose();
    for (Eigen::Index i = 0; i < du.size(); ++i) du.data()[i] *= gelu_grad(A.u.data()[i]);
    gb.w_fc.noalias() += A.h2.transpose() * du;
    gb.b_fc += du.colwise().sum().transpose();
    const Mat<T> dh2 = du * b.w_fc.transpose();
    dx += ln_backward(dh2, A.ln2, b.ln2_gain, gb.ln2_gain, gb.ln2_bias);
    // Attention: x' = x + a Wo + bo
    gb.w_o.noalias() += A.a.transpose() * dx;
    gb.b_o += dx.colwise().sum().transpose();
    const Mat<T> da = dx * b.w_o.transpose();
    Mat<T> dq(n, c.n_head * hd), dk = Mat<T>::Zero(n, c.kv_width()), dv = Mat<T>::Zero(n, c.kv_width());
    for (int h = 0; h < c.n_head; ++h) {
      const int g = h / group;
      const Mat<T>& P = A.P[h];
      const auto dOh = da.middleCols(h * hd, hd);
      dv.middleCols(g * hd, hd).noalias() += P.transpose() * dOh;
      Mat<T> dS = dOh * A.v.middleCols(g * hd, hd).transpose();  // dP [T, T]
      for (int i = 0; i < n; ++i) {
        T dot = 0;
        for (int j = 0; j <= i; ++j) dot += dS(i, j) * P(i, j);
        if (g_broken == "attention") dot = 0;  // drops the softmax normaliser's term
        for (int j = 0; j <= i; ++j) dS(i, j) = P(i, j) * (dS(i, j) - dot) * scale;
        for (int j = i + 1; j < n; ++j) dS(i, j) = 0;
      }
      dq.middleCols(h * hd, hd).noalias() = dS * A.k.middleCols(g * hd, hd);
      dk.middleCols(g * hd, hd).noalias() += dS.transpose() * A.q.middleCols(h * hd, hd);
    }
    gb.w_q.noalias() += A.h1.transpose() * dq;
    gb.b_q += dq.colwise().sum().transpose();
    gb.w_k.noalias() += A.h1.transpose() * dk;
    gb.b_k += dk.colwise().sum().transpose();
    gb.w_v.noalias() += A.h1.transpose() * dv;
    gb.b_v += dv.colwise().sum().transpose();
    Mat<T> dh1 = dq * b.w_q.transpose();
    dh1.noalias() += dk * b.w_k.transpose();
    dh1.noalias() += dv * b.w_v.transpose();
    dx += ln_backward(dh1, A.ln1, b.ln1_gain, gb.ln1_gain, gb.ln1_bias);
  }
  // Embeddings: x0 = wte[tokens] + wpe[0..T-1]
  for (int t = 0; t < n; ++t) {
    grad.wte.row(tokens[t]) += dx.row(t);
    if (g_broken != "embedding") grad.wpe.row(t) += dx.row(t);
  }
  return loss;
}

#define KVLAB_TRAIN_INSTANTIATE(T)                                                                         \
  template std::vector<ParamRef<T>> param_refs<T>(GptWeights<T>&);                                         \
  template GptWeights<T> zeros_like<T>(const GptWeights<T>&);                                              \
  template std::size_t param_count<T>(const GptWeights<T>&);                                               \
  template Mat<T> train_forward<T>(const ModelConfig&, const GptWeights<T>&, std::span<const int>);        \
  template double sequence_loss<T>(const ModelConfig&, const GptWeights<T>&, std::span<const int>,         \
                                   std::span<const int>);                                                  \
  template double forward_backward<T>(const ModelConfig&, const GptWeights<T>&, std::span<const int>,      \
                                      std::span<const int>, T, GptWeights<T>&);
KVLAB_TRAIN_INSTANTIATE(float)
KVLAB_TRAIN_INSTANTIATE(double)

}  // namespace kvlab::train

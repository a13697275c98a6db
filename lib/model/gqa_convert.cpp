#include "model/gqa_convert.hpp"

#include <fmt/format.h>

#include "core/error.hpp"

namespace kvlab {
namespace {

/// Columns [d_in, G_old·hd] → [d_in, G_new·hd]: new head g = mean of old heads g·r .. g·r + r − 1.
template <class T>
Mat<T> pool_columns(const Mat<T>& w, int head_dim, int n_new, int r) {
  Mat<T> out = Mat<T>::Zero(w.rows(), static_cast<Eigen::Index>(n_new) * head_dim);
  for (int g = 0; g < n_new; ++g) {
    auto dst = out.middleCols(static_cast<Eigen::Index>(g) * head_dim, head_dim);
    for (int i = 0; i < r; ++i) dst += w.middleCols(static_cast<Eigen::Index>(g * r + i) * head_dim, head_dim);
    dst /= T(r);
  }
  return out;
}

template <class T>
Vec<T> pool_bias(const Vec<T>& b, int head_dim, int n_new, int r) {
  const Mat<T> row = b.transpose();
  return pool_columns<T>(row, head_dim, n_new, r).row(0).transpose();
}

}  // namespace

template <class T>
MiniGPT<T> mean_pool_kv_heads(const MiniGPT<T>& mha, int n_kv_head) {
  const ModelConfig& c = mha.config();
  if (n_kv_head < 1 || c.n_kv_head % n_kv_head != 0)
    throw InputError(fmt::format("n_kv_head: must divide the model's {} K/V heads (got {})", c.n_kv_head, n_kv_head));
  ModelConfig gc = c;
  gc.n_kv_head = n_kv_head;
  MiniGPT<T> gqa(gc, 0);  // shapes only: every weight is replaced below
  const int r = c.n_kv_head / n_kv_head;
  auto& w = gqa.weights();
  w = mha.weights();
  for (auto& b : w.blocks) {
    b.w_k = pool_columns<T>(b.w_k, c.head_dim, n_kv_head, r);
    b.w_v = pool_columns<T>(b.w_v, c.head_dim, n_kv_head, r);
    b.b_k = pool_bias<T>(b.b_k, c.head_dim, n_kv_head, r);
    b.b_v = pool_bias<T>(b.b_v, c.head_dim, n_kv_head, r);
  }
  return gqa;
}

template MiniGPT<double> mean_pool_kv_heads<double>(const MiniGPT<double>&, int);
template MiniGPT<float> mean_pool_kv_heads<float>(const MiniGPT<float>&, int);

}  // namespace kvlab

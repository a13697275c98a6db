#include "model/ragged.hpp"

#include <stdexcept>

#include <fmt/format.h>

#include "attention/gqa.hpp"
#include "model/ops.hpp"

namespace kvlab {

template <class T>
Mat<T> attention_sublayer(const BlockWeights<T>& b, const ModelConfig& c, const Mat<T>& x) {
  const Mat<T> h = layer_norm(x, b.ln1_gain, b.ln1_bias);
  Mat<T> q = linear(h, b.w_q, b.b_q);
  Mat<T> k = linear(h, b.w_k, b.b_k);
  const Mat<T> v = linear(h, b.w_v, b.b_v);
  if (c.positional == Positional::rope) {
    apply_rope(q, c.n_head, c.head_dim, 0, c.rope_theta);
    apply_rope(k, c.n_kv_head, c.head_dim, 0, c.rope_theta);
  }
  const ConstMatView<T> kv_k(k.data(), k.rows(), k.cols()), kv_v(v.data(), v.rows(), v.cols());
  const Mat<T> att = grouped_query_attention(q, kv_k, kv_v, c.n_head, c.n_kv_head, c.head_dim, 0, c.causal);
  return x + linear(att, b.w_o, b.b_o);
}

template <class T>
Mat<T> ragged_attention_sublayer(const BlockWeights<T>& b, const ModelConfig& c, const Mat<T>& x,
                                 const std::vector<int>& lengths) {
  Eigen::Index total = 0;
  for (int n : lengths) {
    if (n < 1) throw std::invalid_argument(fmt::format("ragged_attention_sublayer: request length {} < 1", n));
    total += n;
  }
  if (total != x.rows())
    throw std::invalid_argument(fmt::format("ragged_attention_sublayer: lengths sum to {}, x has {} rows", total, x.rows()));
  Mat<T> out(x.rows(), x.cols());
  Eigen::Index offset = 0;
  for (int n : lengths) {
    out.middleRows(offset, n) = attention_sublayer(b, c, Mat<T>(x.middleRows(offset, n)));
    offset += n;
  }
  return out;
}

template Mat<double> attention_sublayer(const BlockWeights<double>&, const ModelConfig&, const Mat<double>&);
template Mat<float> attention_sublayer(const BlockWeights<float>&, const ModelConfig&, const Mat<float>&);
template Mat<double> ragged_attention_sublayer(const BlockWeights<double>&, const ModelConfig&, const Mat<double>&,
                                               const std::vector<int>&);
template Mat<float> ragged_attention_sublayer(const BlockWeights<float>&, const ModelConfig&, const Mat<float>&,
                                              const std::vector<int>&);

}  // namespace kvlab

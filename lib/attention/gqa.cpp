#include "attention/gqa.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "attention/softmax_head.hpp"
#include "core/op_count.hpp"

namespace kvlab {

template <class T>
Mat<T> grouped_query_attention(const Mat<T>& q, const ConstMatView<T>& k, const ConstMatView<T>& v,
                               int n_head, int n_kv_head, int head_dim, int q_pos0, bool causal) {
  const int n_new = static_cast<int>(q.rows());
  const int n_ctx = static_cast<int>(k.rows());
  if (n_kv_head <= 0 || n_head % n_kv_head != 0 || q.cols() != n_head * head_dim ||
      k.cols() != n_kv_head * head_dim || v.cols() != k.cols() || v.rows() != k.rows() ||
      q_pos0 < 0 || q_pos0 + n_new > n_ctx)
    throw std::invalid_argument(fmt::format(
        "grouped_query_attention: q [{}, {}], k [{}, {}], v [{}, {}], n_head {}, n_kv_head {}, "
        "head_dim {}, q_pos0 {}", q.rows(), q.cols(), k.rows(), k.cols(), v.rows(), v.cols(), n_head,
        n_kv_head, head_dim, q_pos0));

  const int group = n_head / n_kv_head;
  const T scale = T(1) / std::sqrt(T(head_dim));
  Mat<T> out = Mat<T>::Zero(n_new, n_head * head_dim);
  std::vector<T> score(static_cast<std::size_t>(n_ctx));

  for (int i = 0; i < n_new; ++i) {
    const int n_visible = causal ? q_pos0 + i + 1 : n_ctx;  // keys 0 .. n_visible - 1
    if (MacCount* count = active_mac_count())  // q·k and weights·V below, every head
      count->attention += 2ull * n_visible * head_dim * n_head;
    for (int h = 0; h < n_head; ++h) {
      const int g = h / group;  // the K/V head this query head reads (repeat_interleave)
      detail::attend_head(q.data() + static_cast<std::ptrdiff_t>(i) * q.cols() + h * head_dim, n_visible,
                          [](int s) { return s; }, k, v, g, head_dim, scale, score.data(),
                          out.data() + static_cast<std::ptrdiff_t>(i) * out.cols() + h * head_dim);
    }
  }
  return out;
}

template <class T>
void apply_rope(Mat<T>& x, int n_heads, int head_dim, int pos0, double theta) {
  if (head_dim % 2 != 0 || x.cols() != n_heads * head_dim)
    throw std::invalid_argument(fmt::format("apply_rope: x [{}, {}] with {} heads of head_dim {}",
                                            x.rows(), x.cols(), n_heads, head_dim));
  const int half = head_dim / 2;
  for (int t = 0; t < x.rows(); ++t) {
    const double pos = static_cast<double>(pos0 + t);
    for (int i = 0; i < half; ++i) {
      const double angle = pos * std::pow(theta, -2.0 * i / head_dim);
      const T c = static_cast<T>(std::cos(angle)), s = static_cast<T>(std::sin(angle));
      for (int h = 0; h < n_heads; ++h) {
        T& a = x(t, h * head_dim + i);
        T& b = x(t, h * head_dim + i + half);
        const T a0 = a, b0 = b;
        a = a0 * c - b0 * s;
        b = a0 * s + b0 * c;
      }
    }
  }
}

template Mat<double> grouped_query_attention<double>(const Mat<double>&, const ConstMatView<double>&,
                                                     const ConstMatView<double>&, int, int, int, int, bool);
template Mat<float> grouped_query_attention<float>(const Mat<float>&, const ConstMatView<float>&,
                                                   const ConstMatView<float>&, int, int, int, int, bool);
template void apply_rope<double>(Mat<double>&, int, int, int, double);
template void apply_rope<float>(Mat<float>&, int, int, int, double);

}  // namespace kvlab

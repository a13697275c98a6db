#include "attention/window.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "attention/gqa.hpp"

namespace kvlab {

template <class T>
Mat<T> sliding_window_attention(const Mat<T>& q, const ConstMatView<T>& k, const ConstMatView<T>& v, int n_head,
                                int n_kv_head, int head_dim, int q_pos0, int k_pos0, int window) {
  const int n_new = static_cast<int>(q.rows()), n_ctx = static_cast<int>(k.rows());
  if (window < 1 || k_pos0 < 0 || q_pos0 < k_pos0 || q_pos0 + n_new > k_pos0 + n_ctx || v.rows() != k.rows())
    throw std::invalid_argument(fmt::format(
        "sliding_window_attention: {} queries from position {}, {} keys from position {}, window {}", n_new, q_pos0,
        n_ctx, k_pos0, window));
  Mat<T> out(n_new, q.cols());
  for (int i = 0; i < n_new; ++i) {
    const int p = q_pos0 + i;
    const int lo = std::max(0, p - window + 1 - k_pos0), hi = p - k_pos0;  // rows lo .. hi visible
    const ConstMatView<T> kw(k.data() + static_cast<std::ptrdiff_t>(lo) * k.cols(), hi - lo + 1, k.cols());
    const ConstMatView<T> vw(v.data() + static_cast<std::ptrdiff_t>(lo) * v.cols(), hi - lo + 1, v.cols());
    const Mat<T> qi = q.row(i);
    // The query is the last of the visible rows: causal over them = all of them.
    out.row(i) = grouped_query_attention(qi, kw, vw, n_head, n_kv_head, head_dim, hi - lo, true);
  }
  return out;
}

template Mat<double> sliding_window_attention<double>(const Mat<double>&, const ConstMatView<double>&,
                                                      const ConstMatView<double>&, int, int, int, int, int, int);
template Mat<float> sliding_window_attention<float>(const Mat<float>&, const ConstMatView<float>&,
                                                    const ConstMatView<float>&, int, int, int, int, int, int);

}  // namespace kvlab

#include "attention/masked.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

#include "attention/softmax_head.hpp"

namespace kvlab {

AttentionMask::AttentionMask(int r, int c, bool value) : rows(r), cols(c) {
  if (r < 0 || c < 0) throw std::invalid_argument(fmt::format("AttentionMask: {} × {}", r, c));
  allowed.assign(static_cast<std::size_t>(r) * static_cast<std::size_t>(c), value ? 1 : 0);
}

template <class T>
Mat<T> masked_attention(const Mat<T>& q, const ConstMatView<T>& k, const ConstMatView<T>& v,
                        int n_head, int n_kv_head, int head_dim, const AttentionMask& mask) {
  const int n_new = static_cast<int>(q.rows());
  const int n_ctx = static_cast<int>(k.rows());
  if (n_kv_head <= 0 || n_head % n_kv_head != 0 || q.cols() != n_head * head_dim ||
      k.cols() != n_kv_head * head_dim || v.cols() != k.cols() || v.rows() != k.rows() ||
      mask.rows != n_new || mask.cols != n_ctx)
    throw std::invalid_argument(fmt::format(
        "masked_attention: q [{}, {}], k [{}, {}], v [{}, {}], mask [{}, {}], n_head {}, "
        "n_kv_head {}, head_dim {}",
        q.rows(), q.cols(), k.rows(), k.cols(), v.rows(), v.cols(), mask.rows, mask.cols, n_head,
        n_kv_head, head_dim));

  const int group = n_head / n_kv_head;
  const T scale = T(1) / std::sqrt(T(head_dim));
  Mat<T> out = Mat<T>::Zero(n_new, n_head * head_dim);
  std::vector<int> keys;  // the keys query i reads, in increasing order
  std::vector<T> score;
  for (int i = 0; i < n_new; ++i) {
    keys.clear();
    for (int j = 0; j < n_ctx; ++j)
      if (mask(i, j)) keys.push_back(j);
    if (keys.empty())
      throw std::invalid_argument(fmt::format("masked_attention: query {} is allowed no key", i));
    score.resize(keys.size());
    for (int h = 0; h < n_head; ++h)
      detail::attend_head(q.data() + static_cast<std::ptrdiff_t>(i) * q.cols() + h * head_dim,
                          static_cast<int>(keys.size()), [&keys](int s) { return keys[static_cast<std::size_t>(s)]; }, k,
                          v, h / group, head_dim, scale, score.data(),
                          out.data() + static_cast<std::ptrdiff_t>(i) * out.cols() + h * head_dim);
  }
  return out;
}

template Mat<double> masked_attention<double>(const Mat<double>&, const ConstMatView<double>&,
                                              const ConstMatView<double>&, int, int, int,
                                              const AttentionMask&);
template Mat<float> masked_attention<float>(const Mat<float>&, const ConstMatView<float>&,
                                            const ConstMatView<float>&, int, int, int,
                                            const AttentionMask&);

}  // namespace kvlab

#include "attention/masked.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

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
    for (int h = 0; h < n_head; ++h) {
      const int g = h / group;
      const T* qh = q.data() + static_cast<std::ptrdiff_t>(i) * q.cols() + h * head_dim;
      T max_score = -std::numeric_limits<T>::infinity();
      for (std::size_t s = 0; s < keys.size(); ++s) {
        const T* kj = k.data() + static_cast<std::ptrdiff_t>(keys[s]) * k.cols() + g * head_dim;
        T dot = 0;
        for (int c = 0; c < head_dim; ++c) dot += qh[c] * kj[c];
        score[s] = dot * scale;
        max_score = std::max(max_score, score[s]);
      }
      T denom = 0;
      for (auto& s : score) {
        s = std::exp(s - max_score);
        denom += s;
      }
      T* oh = out.data() + static_cast<std::ptrdiff_t>(i) * out.cols() + h * head_dim;
      for (std::size_t s = 0; s < keys.size(); ++s) {
        const T w = score[s] / denom;
        const T* vj = v.data() + static_cast<std::ptrdiff_t>(keys[s]) * v.cols() + g * head_dim;
        for (int c = 0; c < head_dim; ++c) oh[c] += w * vj[c];
      }
    }
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

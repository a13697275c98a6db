#include "attention/kv_layout.hpp"

#include <stdexcept>

#include <fmt/format.h>

namespace kvlab {
namespace {

void check_shape(const char* fn, Eigen::Index cols, int n_kv_head, int head_dim, int n_rep) {
  if (n_kv_head < 1 || head_dim < 1 || n_rep < 1 || cols != static_cast<Eigen::Index>(n_kv_head) * head_dim)
    throw std::invalid_argument(fmt::format("{}: x has {} columns, n_kv_head {}, head_dim {}, n_rep {}", fn, cols,
                                            n_kv_head, head_dim, n_rep));
}

}  // namespace

int kv_head_for_query(int j, int n_head, int n_kv_head, KvHeadOrder layout) {
  if (n_kv_head < 1 || n_head % n_kv_head != 0 || j < 0 || j >= n_head)
    throw std::invalid_argument(
        fmt::format("kv_head_for_query: j = {}, n_head = {}, n_kv_head = {}", j, n_head, n_kv_head));
  return layout == KvHeadOrder::grouped ? j / (n_head / n_kv_head) : j % n_kv_head;
}

template <class T>
Mat<T> repeat_interleave_kv(const Mat<T>& x, int n_kv_head, int head_dim, int n_rep) {
  check_shape("repeat_interleave_kv", x.cols(), n_kv_head, head_dim, n_rep);
  const int n_head = n_kv_head * n_rep;
  Mat<T> out(x.rows(), static_cast<Eigen::Index>(n_head) * head_dim);
  for (int j = 0; j < n_head; ++j)  // output head j is a copy of input head j / n_rep
    out.middleCols(static_cast<Eigen::Index>(j) * head_dim, head_dim) =
        x.middleCols(static_cast<Eigen::Index>(j / n_rep) * head_dim, head_dim);
  return out;
}

template <class T>
Mat<T> repeat_kv(const Mat<T>& x, int n_kv_head, int head_dim, int n_rep) {
  check_shape("repeat_kv", x.cols(), n_kv_head, head_dim, n_rep);
  Mat<T> out(x.rows(), static_cast<Eigen::Index>(n_kv_head) * n_rep * head_dim);
  for (int r = 0; r < n_rep; ++r)  // the whole block of G heads, n_rep times
    out.middleCols(static_cast<Eigen::Index>(r) * n_kv_head * head_dim, static_cast<Eigen::Index>(n_kv_head) * head_dim) = x;
  return out;
}

template <class T>
Mat<T> expand_reshape_kv(const Mat<T>& x, int n_kv_head, int head_dim, int n_rep) {
  check_shape("expand_reshape_kv", x.cols(), n_kv_head, head_dim, n_rep);
  Mat<T> out(x.rows(), static_cast<Eigen::Index>(n_kv_head) * n_rep * head_dim);
  for (Eigen::Index s = 0; s < x.rows(); ++s)
    for (int g = 0; g < n_kv_head; ++g)
      for (int r = 0; r < n_rep; ++r)      // expanded view: stride 0 over r
        for (int c = 0; c < head_dim; ++c)  // reshape: flat head index g * n_rep + r
          out(s, (static_cast<Eigen::Index>(g) * n_rep + r) * head_dim + c) = x(s, static_cast<Eigen::Index>(g) * head_dim + c);
  return out;
}

template Mat<double> repeat_interleave_kv<double>(const Mat<double>&, int, int, int);
template Mat<float> repeat_interleave_kv<float>(const Mat<float>&, int, int, int);
template Mat<double> repeat_kv<double>(const Mat<double>&, int, int, int);
template Mat<float> repeat_kv<float>(const Mat<float>&, int, int, int);
template Mat<double> expand_reshape_kv<double>(const Mat<double>&, int, int, int);
template Mat<float> expand_reshape_kv<float>(const Mat<float>&, int, int, int);

}  // namespace kvlab

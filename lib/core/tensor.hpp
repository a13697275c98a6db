// Tensor aliases. kvlab stores activations row-major, one token per row: a [T, C] matrix holds T
// tokens of C features, and a [T, n_kv_head, head_dim] tensor is a [T, n_kv_head * head_dim]
// matrix whose row t is head 0's head_dim values, then head 1's, ...
#pragma once

#include <Eigen/Core>

namespace kvlab {

/// Row-major dynamic matrix: element (t, c) is token t, feature c.
template <class T>
using Mat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
/// Dynamic vector (biases, LayerNorm gains).
template <class T>
using Vec = Eigen::Matrix<T, Eigen::Dynamic, 1>;
/// A read-only view of the first rows of a cache buffer, without a copy.
template <class T>
using ConstMatView = Eigen::Map<const Mat<T>>;

}  // namespace kvlab

// The per-token pieces of the mini-GPT: linear layer, LayerNorm, GELU. Each output row depends
// only on the same input row, and is summed in a fixed order (design.md "Numerics"), so that the
// cached and the full forward agree bit for bit wherever the mathematics says they are equal.
#pragma once

#include "core/tensor.hpp"

namespace kvlab {

/// y = x W + b, row by row. x: [T, in], W: [in, out], b: [out] -> [T, out]. Each y(t, j) is
/// b(j) + x(t,0) W(0,j) + x(t,1) W(1,j) + ... in that order (no blocking over T).
template <class T>
Mat<T> linear(const Mat<T>& x, const Mat<T>& W, const Vec<T>& b);

/// LayerNorm over the features of each row (biased variance, eps = 1e-5, as torch.nn.LayerNorm).
/// x: [T, C], gain and bias [C] -> [T, C].
template <class T>
Mat<T> layer_norm(const Mat<T>& x, const Vec<T>& gain, const Vec<T>& bias);

/// Exact GELU, 0.5 x (1 + erf(x / sqrt 2)) (torch.nn.GELU default), element-wise in place.
template <class T>
void gelu_inplace(Mat<T>& x);

}  // namespace kvlab

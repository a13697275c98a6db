// LLM.int8() (Dettmers et al., "LLM.int8(): 8-bit Matrix Multiplication for Transformers at
// Scale", arXiv 2208.07339): absmax int8 quantization, the vector-wise int8 matrix product, and
// the mixed-precision decomposition that keeps outlier feature dimensions in 16 bits.
//
//   absmax (§3.1):        s = max|x| / 127, q = round(x / s) in [-127, 127] (ties to even), x̂ = s·q
//   vector-wise (§3.2):   X [n, d] gets one scale per row (token), W [d, m] one per column (output
//                         feature); C = X W ≈ diag(s_x) (X_q W_q) diag(s_w), X_q W_q summed exactly
//                         in integers
//   decomposition (§3.3): the feature dimensions k where some |X_ik| >= threshold (6.0 in the
//                         paper) and the matching rows of W are multiplied in fp16; every other
//                         dimension goes through the vector-wise int8 product
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.hpp"

namespace kvlab {

/// Vector-wise int8 product of x [n, d] and w [d, m]: row-wise scales for x, column-wise for w,
/// integer dot products in int64 (exact), rescaled in double. Returns [n, m]. A row or column of
/// zeros has scale 0 and gives 0. Throws std::invalid_argument when x.cols() != w.rows() or an
/// entry is not finite.
Mat<double> int8_vectorwise_matmul(const Mat<double>& x, const Mat<double>& w);

/// What llm_int8_matmul returns.
struct Int8Decomposition {
  Mat<double> c;                     ///< [n, m]: fp16 outlier part + int8 part
  std::vector<int> outlier_columns;  ///< feature dimensions k kept in fp16, ascending
};

/// LLM.int8()'s mixed-precision decomposition of x [n, d] · w [d, m]: the columns of x with some
/// |x_ik| >= threshold, and the same rows of w, are rounded to fp16 and multiplied with their
/// products summed in double (standing in for fp16 tensor cores' wider accumulation); the other
/// dimensions go through int8_vectorwise_matmul. Same errors as int8_vectorwise_matmul; also
/// std::invalid_argument for a threshold that is not positive and finite.
Int8Decomposition llm_int8_matmul(const Mat<double>& x, const Mat<double>& w, double threshold = 6.0);

}  // namespace kvlab

// int8-outliers (003 part 4, Q7): options and the testable entry point. See int8_outliers.cpp.
#pragma once

#include <functional>

#include "quant/int8_matmul.hpp"
#include "framework/check.hpp"

namespace kvlab::checks {

struct Int8OutliersOptions {
  int tokens = 64;                ///< n: rows of X (tokens)
  int features = 256;             ///< d: columns of X = rows of W (hidden features)
  int outputs = 128;              ///< m: columns of W
  int outlier_dims = 4;           ///< feature dimensions made outliers
  double outlier_magnitude = 40;  ///< their |x| is drawn from [M/2, 3M/2] per dimension: 20–60 at 40
  double threshold = 6.0;         ///< LLM.int8()'s outlier threshold
};

/// The library parts int8-outliers uses; unit tests replace them with broken ones.
struct Int8OutliersParts {
  std::function<Mat<double>(const Mat<double>&, const Mat<double>&)> vectorwise;                  ///< empty: library
  std::function<Int8Decomposition(const Mat<double>&, const Mat<double>&, double)> decomposition;  ///< empty: library
};

/// Runs the check. Throws InputError naming the option on bad input.
Result run_int8_outliers(const Int8OutliersOptions& o, const RunContext& ctx, const Int8OutliersParts& parts = {});

}  // namespace kvlab::checks

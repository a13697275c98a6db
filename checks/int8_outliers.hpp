// int8-outliers (003 part 4, Q7): options, what it measures, and its testable steps.
// See int8_outliers.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "quant/int8_matmul.hpp"
#include "framework/spec.hpp"

namespace kvlab::checks::int8_outliers {

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

/// The error of one product Ĉ against C = X W in double.
struct ProductError {
  double worst = 0;       ///< max |C − Ĉ| / the check's bound (NaN in, NaN out); unused for weights kept
  double rms = 0;         ///< RMS |Ĉ − C|
  double relative = 0;    ///< ‖Ĉ − C‖ / ‖C‖
  double mean_bound = 0;  ///< the bound's mean over the entries
};

/// What int8-outliers measured.
struct Int8OutliersMeasured {
  Int8OutliersOptions options;
  std::uint64_t seed = 0;
  std::vector<int> planted;         ///< the planted outlier feature dimensions, ascending
  std::vector<double> magnitudes;   ///< their |x|
  double typical_row_max = 0;       ///< mean over the rows of X (no outliers) of max |x|
  std::vector<int> found;           ///< the outlier columns the decomposition found
  ProductError clean;               ///< absmax int8, vector-wise, no outliers
  ProductError outliers;            ///< the same with the outliers planted
  ProductError decomposition;       ///< LLM.int8()'s decomposition, with the outliers
  ProductError weights_kept;        ///< the largest weights in fp16, the rest int8 (E19)
  std::int64_t rows_worse = 0;          ///< rows where the outliers make plain int8's error larger
  std::int64_t rows_restored = 0;       ///< rows where the decomposition beats plain int8 (outliers)
  std::int64_t rows_beat_weights = 0;   ///< rows where the decomposition beats keeping the weights
};

/// Draws X and W, plants the outliers, multiplies every way (`parts` or the library's) and
/// reduces the errors against the check's own bounds.
Int8OutliersMeasured measure_int8_outliers(const Int8OutliersOptions& o, const RunContext& ctx,
                                           const Int8OutliersParts& parts = {});
/// The verdict rows: each product within its bound, the planted dims found, and three row counts
/// (the last E19's).
std::vector<Expectation> judge_int8_outliers(const Int8OutliersMeasured& m);

/// The check as data (registered as `int8-outliers`).
const CheckDef<Int8OutliersOptions, Int8OutliersMeasured>& int8_outliers_check();

/// Runs the check. Throws InputError naming the option on bad input.
Result run_int8_outliers(const Int8OutliersOptions& o, const RunContext& ctx, const Int8OutliersParts& parts = {});

}  // namespace kvlab::checks::int8_outliers

namespace kvlab::checks {
using namespace int8_outliers;  // callers write kvlab::checks::X for this check's X
}  // namespace kvlab::checks

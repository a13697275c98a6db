// The floating-point type a model check computes in: float64 (default, as the course computed)
// or float32 (`--dtype f32`), and the unit roundoff each implies for tolerances.
#pragma once

#include <string>

#include "core/numerics.hpp"

namespace kvlab {

enum class Dtype { f64, f32 };

/// "f64" | "f32" -> Dtype; throws InputError naming `--dtype` otherwise.
Dtype parse_dtype(const std::string& s);
const char* dtype_name(Dtype d);

/// Unit roundoff u = machine epsilon / 2 of the dtype (1.1e-16 for f64, 6.0e-8 for f32).
inline double unit_roundoff(Dtype d) {
  return d == Dtype::f64 ? unit_roundoff<double>() : unit_roundoff<float>();
}

}  // namespace kvlab

#include "core/dtype.hpp"

#include "core/error.hpp"

namespace kvlab {

Dtype parse_dtype(const std::string& s) {
  if (s == "f64") return Dtype::f64;
  if (s == "f32") return Dtype::f32;
  throw InputError("--dtype: must be f64 or f32 (got '" + s + "')");
}

const char* dtype_name(Dtype d) { return d == Dtype::f64 ? "f64" : "f32"; }

}  // namespace kvlab

// Counting the multiply-adds the model code performs (004 §1.1; 003 Q5): an instrumented forward.
//
// While a CountMacs object is alive on a thread, linear() (model/ops) and grouped_query_attention()
// (attention/gqa) add to it the multiply-adds their loops perform: linear x [T, in] · W [in, out]
// adds T·in·out; attention adds, for every query and head, n_visible·head_dim for q·k and as many
// for the weighted sum of V. LayerNorm, GELU, softmax and residual adds (O(T·d)) are not counted.
// One FLOP count is 2 × multiply-adds.
#pragma once

#include <cstdint>

namespace kvlab {

/// Multiply-adds, by where they were performed.
struct MacCount {
  std::uint64_t linear = 0;     ///< in linear(): projections, MLP, LM head
  std::uint64_t attention = 0;  ///< in grouped_query_attention(): q·k and weights·V
  std::uint64_t total() const { return linear + attention; }
};

/// RAII scope: counts this thread's multiply-adds from construction to destruction. Scopes nest;
/// the innermost live one counts. Not copyable.
class CountMacs {
 public:
  CountMacs();
  ~CountMacs();
  CountMacs(const CountMacs&) = delete;
  CountMacs& operator=(const CountMacs&) = delete;
  const MacCount& count() const { return count_; }

 private:
  MacCount count_;
  MacCount* previous_;
};

/// The count of the innermost live CountMacs on this thread; nullptr when none (the usual case:
/// the instrumented code then pays one pointer test per call).
MacCount* active_mac_count();

}  // namespace kvlab

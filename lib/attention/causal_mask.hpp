// Causal masks for T new queries over S keys (004 §3.3; 000 §6.3), built three ways so that a
// check can compare them: from absolute positions, as torch.tril(diagonal), and the top-left
// alignment of SDPA's is_causal=True (the pitfall: with T = 1 it lets the query see key 0 only).
#pragma once

#include <string>
#include <vector>

namespace kvlab {

/// A boolean attention mask [T, S] as a grid of cells to compare: allowed(i, j) is true when query
/// i may see key j. (The mask masked attention applies is attention/masked.hpp's AttentionMask.)
struct CausalMaskGrid {
  int n_query = 0;                  ///< T
  int n_key = 0;                    ///< S
  std::vector<unsigned char> cells;  ///< row-major [T, S], 1 = allowed

  bool allowed(int i, int j) const { return cells[static_cast<std::size_t>(i) * n_key + j] != 0; }
  /// Keys query i may see.
  int visible(int i) const;
  /// Cells where this mask and `other` disagree. Throws std::invalid_argument on a shape mismatch.
  int mismatches(const CausalMaskGrid& other) const;
  /// The rows as text, e.g. "1 1 0 / 1 1 1" ('1' allowed), for tables.
  std::string to_string() const;
};

/// The causal mask from absolute positions: new query i sits at position S − T + i and sees keys
/// 0 .. S − T + i (the lower-right alignment of 004 §3.3). Throws std::invalid_argument unless
/// 1 <= T <= S.
CausalMaskGrid causal_mask_from_positions(int n_query, int n_key);

/// torch.ones(T, S).tril(diagonal): allowed(i, j) = (j − i <= diagonal). diagonal = S − T is the
/// lower-right causal mask; diagonal = 0 is SDPA's is_causal=True (top-left aligned).
/// Throws std::invalid_argument when T or S is not positive.
CausalMaskGrid tril_mask(int n_query, int n_key, int diagonal);

}  // namespace kvlab

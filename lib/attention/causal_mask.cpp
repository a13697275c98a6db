#include "attention/causal_mask.hpp"

#include <stdexcept>

#include <fmt/format.h>

namespace kvlab {

int CausalMaskGrid::visible(int i) const {
  int n = 0;
  for (int j = 0; j < n_key; ++j) n += allowed(i, j) ? 1 : 0;
  return n;
}

int CausalMaskGrid::mismatches(const CausalMaskGrid& other) const {
  if (other.n_query != n_query || other.n_key != n_key)
    throw std::invalid_argument(fmt::format("CausalMaskGrid::mismatches: [{}, {}] vs [{}, {}]", n_query, n_key,
                                            other.n_query, other.n_key));
  int n = 0;
  for (std::size_t c = 0; c < cells.size(); ++c) n += cells[c] != other.cells[c] ? 1 : 0;
  return n;
}

std::string CausalMaskGrid::to_string() const {
  std::string s;
  for (int i = 0; i < n_query; ++i) {
    if (i > 0) s += " / ";
    for (int j = 0; j < n_key; ++j) s += allowed(i, j) ? '1' : '0';
  }
  return s;
}

CausalMaskGrid causal_mask_from_positions(int n_query, int n_key) {
  if (n_query < 1 || n_query > n_key)
    throw std::invalid_argument(fmt::format("causal_mask_from_positions: T = {}, S = {} (need 1 <= T <= S)",
                                            n_query, n_key));
  CausalMaskGrid m{n_query, n_key, std::vector<unsigned char>(static_cast<std::size_t>(n_query) * n_key, 0)};
  for (int i = 0; i < n_query; ++i) {
    const int query_pos = n_key - n_query + i;  // absolute position of new query i
    for (int key_pos = 0; key_pos <= query_pos; ++key_pos) m.cells[static_cast<std::size_t>(i) * n_key + key_pos] = 1;
  }
  return m;
}

CausalMaskGrid tril_mask(int n_query, int n_key, int diagonal) {
  if (n_query < 1 || n_key < 1)
    throw std::invalid_argument(fmt::format("tril_mask: T = {}, S = {}", n_query, n_key));
  CausalMaskGrid m{n_query, n_key, std::vector<unsigned char>(static_cast<std::size_t>(n_query) * n_key, 0)};
  for (int i = 0; i < n_query; ++i)
    for (int j = 0; j < n_key; ++j) m.cells[static_cast<std::size_t>(i) * n_key + j] = (j - i <= diagonal) ? 1 : 0;
  return m;
}

}  // namespace kvlab

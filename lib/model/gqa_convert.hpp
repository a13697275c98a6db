// MHA → GQA conversion by mean-pooling (004 §2.4; Ainslie et al. 2023, "GQA", §2.1): the K and V
// projection heads of each group of n_head / G query heads are averaged into one shared head.
#pragma once

#include "model/gpt.hpp"

namespace kvlab {

/// A copy of `mha` with n_kv_head = G: in every layer, the new K/V head g has projection columns
/// (and bias) equal to the mean of the old heads g·r .. g·r + r − 1, r = mha.n_kv_head / G (the
/// repeat_interleave grouping; summed in head order, then divided by r). Other weights are copied.
/// mha: any model whose n_kv_head is divisible by G (usually MHA, n_kv_head = n_head).
/// Throws InputError naming n_kv_head when G < 1 or G does not divide mha's n_kv_head.
template <class T>
MiniGPT<T> mean_pool_kv_heads(const MiniGPT<T>& mha, int n_kv_head);

}  // namespace kvlab

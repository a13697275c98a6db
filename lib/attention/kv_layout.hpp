// Broadcasting G K/V heads to h query heads (004 §3.4; 000 §4.2; 003 Q6): the three writings of
// 004 §3.4 as explicit copies, so that a check can show which K/V head each query head reads.
//
//   grouped (repeat_interleave(h/G, dim=heads)):  query head j reads K/V head ⌊j / (h/G)⌋
//   tiled   (repeat(1, h/G, 1, 1)):                query head j reads K/V head j mod G
//
// grouped_query_attention (attention/gqa.hpp) is the native grouped kernel: it reads head
// ⌊j / (h/G)⌋ in place, without copying. Shapes: x [S, G * head_dim] -> [S, h * head_dim],
// row s = position s, head-major within the row (core/tensor.hpp).
#pragma once

#include "core/tensor.hpp"

namespace kvlab {

/// How query heads are matched to K/V heads.
enum class KvHeadOrder { grouped, tiled };

/// The K/V head query head j reads under `layout` (h = n_head, G = n_kv_head).
/// Throws std::invalid_argument unless 0 <= j < h and G divides h.
int kv_head_for_query(int j, int n_head, int n_kv_head, KvHeadOrder layout);

/// torch.repeat_interleave(x, n_rep, dim=heads): each K/V head copied n_rep times in a row.
/// x: [S, n_kv_head * head_dim] -> [S, n_kv_head * n_rep * head_dim]. Throws std::invalid_argument
/// when x's width is not n_kv_head * head_dim or a size is not positive.
template <class T>
Mat<T> repeat_interleave_kv(const Mat<T>& x, int n_kv_head, int head_dim, int n_rep);

/// x.repeat(1, n_rep, 1, 1) on [B, G, S, d]: the G heads tiled n_rep times (head j = head j mod G).
/// Same shapes and errors as repeat_interleave_kv.
template <class T>
Mat<T> repeat_kv(const Mat<T>& x, int n_kv_head, int head_dim, int n_rep);

/// x[:, :, None].expand(B, G, n_rep, S, d).reshape(B, G * n_rep, S, d): the expanded view has
/// stride 0 over n_rep, and the row-major reshape numbers head (g, r) as g * n_rep + r.
/// Same shapes and errors as repeat_interleave_kv.
template <class T>
Mat<T> expand_reshape_kv(const Mat<T>& x, int n_kv_head, int head_dim, int n_rep);

}  // namespace kvlab

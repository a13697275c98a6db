#include "reference/kernels.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <stdexcept>

#include <fmt/format.h>

#include "core/tensor.hpp"
#include "reference/attention.hpp"
#include "reference/rope.hpp"

namespace kvlab::gpu {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
}  // namespace

double gamma_f32(double n) { return gamma_n(n, kUnitF32); }

double storage_unit(kernels::Storage s) { return s == kernels::Storage::f32 ? 0.0 : kUnitBf16; }

float round_to_bf16(float x) {
  if (std::isnan(x)) return x;
  std::uint32_t bits = std::bit_cast<std::uint32_t>(x);
  bits += 0x7FFFu + ((bits >> 16) & 1u);  // round to nearest, ties to even
  return std::bit_cast<float>(bits & 0xFFFF0000u);
}

Reference ref_kv_append(const kernels::KvAppendInput& in) {
  const auto& L = in.layout;
  const std::size_t n = L.elems(), w = L.row_elems();
  Reference r;
  r.value.assign(2 * n, kNaN);
  r.scale.assign(2 * n, 0.0);
  for (int b = 0; b < L.batch; ++b) {
    const std::size_t dst = L.slot(b, in.pos[b]) * w;
    for (std::size_t e = 0; e < w; ++e) {
      const double k = in.k_new[b * w + e], v = in.v_new[b * w + e];
      r.value[dst + e] = k, r.scale[dst + e] = std::abs(k);
      r.value[n + dst + e] = v, r.scale[n + dst + e] = std::abs(v);
    }
  }
  r.bound = storage_unit(L.storage);
  r.bound_why = L.storage == kernels::Storage::f32 ? "0: a float32 copy is exact"
                                                   : "u_bf16 = 2^-8: one rounding to bf16";
  return r;
}

Reference ref_rope(const kernels::RopeInput& in) {
  const int d = in.head_dim, w = in.n_heads * d;
  Reference r;
  r.value.resize(in.x.size());
  r.scale.resize(in.x.size());
  for (int b = 0; b < in.batch; ++b) {
    // Each head vector times R_pos (reference/rope.hpp); the scale of an output is the sum of
    // the |terms| of its row of the product (two of them nonzero: |a cos| + |b sin|).
    const Mat<double> rot = reference::rope_matrix(d, in.pos[b], in.theta);
    for (int h = 0; h < in.n_heads; ++h) {
      const std::size_t head = static_cast<std::size_t>(b) * w + static_cast<std::size_t>(h) * d;
      for (int o = 0; o < d; ++o) {
        double value = 0, scale = 0;
        for (int c = 0; c < d; ++c) {
          const double term = rot(o, c) * in.x[head + c];
          value += term, scale += std::abs(term);
        }
        r.value[head + o] = value, r.scale[head + o] = scale;
      }
    }
  }
  r.bound = gamma_f32(3);
  r.bound_why = "gamma_3: cos, sin rounded to float32, a product, a sum";
  return r;
}

Reference ref_decode_attention(const kernels::DecodeAttentionInput& in) {
  const auto& L = in.layout;
  const int hd = L.head_dim, kvw = L.n_kv_head * hd, group = in.n_head / L.n_kv_head;
  const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
  Reference r;
  r.value.resize(in.q.size());
  r.scale.resize(in.q.size());
  double max_qk = 0, range = 0;
  int n_max = 1;
  for (int b = 0; b < L.batch; ++b) {
    const int len = in.lengths[b];
    n_max = std::max(n_max, len);
    Mat<double> k(len, kvw), v(len, kvw), q(1, in.n_head * hd);
    for (int j = 0; j < len; ++j) {
      const std::size_t row = L.slot(b, j) * kvw;
      for (int e = 0; e < kvw; ++e) k(j, e) = in.k_cache[row + e], v(j, e) = in.v_cache[row + e];
    }
    for (int e = 0; e < in.n_head * hd; ++e) q(0, e) = in.q[static_cast<std::size_t>(b) * in.n_head * hd + e];
    // The query is the sequence's last position: every cached key is visible.
    const Mat<double> out =
        reference::masked_attention<double>(q, k, v, in.n_head, L.n_kv_head, hd, [](int, int) { return true; });
    // The weights p_j again, for the scales and the bound's score terms.
    std::vector<double> s(len), p(len);
    for (int h = 0; h < in.n_head; ++h) {
      const int g = h / group;
      double m = -std::numeric_limits<double>::infinity();
      for (int j = 0; j < len; ++j) {
        double dot = 0, abs_dot = 0;
        for (int c = 0; c < hd; ++c) {
          dot += q(0, h * hd + c) * k(j, g * hd + c);
          abs_dot += std::abs(q(0, h * hd + c) * k(j, g * hd + c));
        }
        s[j] = dot * scale;
        max_qk = std::max(max_qk, abs_dot * scale);
        m = std::max(m, s[j]);
      }
      double sum = 0;
      for (int j = 0; j < len; ++j) sum += p[j] = std::exp(s[j] - m);
      for (int j = 0; j < len; ++j) {
        p[j] /= sum;
        range = std::max(range, m - s[j]);
      }
      for (int c = 0; c < hd; ++c) {
        double sc = 0;
        for (int j = 0; j < len; ++j) sc += p[j] * std::abs(v(j, g * hd + c));
        const std::size_t o = (static_cast<std::size_t>(b) * in.n_head + h) * hd + c;
        r.value[o] = out(0, h * hd + c);
        r.scale[o] = sc;
      }
    }
  }
  const double u = kUnitF32, us = storage_unit(L.storage);
  const double e_s = (gamma_f32(hd) + us + 3 * u) * max_qk;
  // Each weight is exp(s^_j - M^)(1 + z_j), |z_j| <= 2(4u + uR) + u (two expf, their rounded
  // arguments, the product). The error of M^ is common to every j and cancels in the normalisation,
  // so the relative error left is eps = e_s + 2uR + 9u, and sum_j p_j eps_j (v_j - o) is at most
  // 2 eps sum_j p_j |v_j|. The numerator and denominator sums (any order: a tree over n leaves, a
  // product per span) add gamma_(n+2) each, V's storage u_s, the division u.
  r.bound = 2 * (e_s + 2 * u * range + 9 * u) + 2 * gamma_f32(n_max + 2) + us + u;
  r.bound_why = fmt::format("2(e_s + 2uR + 9u) + 2gamma_{} + u_s + u; e_s = (gamma_{} + u_s + 3u) x {:.3g}, R = {:.3g}",
                            n_max + 2, hd, max_qk, range);
  return r;
}

Reference ref_layer_norm(const kernels::RowsInput& in) {
  // torch.nn.LayerNorm: (x − mean) / sqrt(biased variance + 1e-5) · gain + bias, per row.
  Reference r;
  r.value.resize(in.x.size());
  r.scale.resize(in.x.size());
  for (int t = 0; t < in.rows; ++t) {
    const float* x = in.x.data() + static_cast<std::size_t>(t) * in.cols;
    double mean = 0, mean_abs = 0, var = 0;
    for (int c = 0; c < in.cols; ++c) mean += x[c], mean_abs += std::abs(x[c]);
    mean /= in.cols, mean_abs /= in.cols;
    for (int c = 0; c < in.cols; ++c) var += (x[c] - mean) * (x[c] - mean);
    const double sigma = std::sqrt(var / in.cols + 1e-5);
    for (int c = 0; c < in.cols; ++c) {
      const std::size_t o = static_cast<std::size_t>(t) * in.cols + c;
      const double g = in.gain[c], b = in.bias[c];
      r.value[o] = (x[c] - mean) / sigma * g + b;
      r.scale[o] = std::abs(g) * (mean_abs + std::abs(x[c] - mean)) / sigma + std::abs(b);
    }
  }
  r.bound = gamma_f32(in.cols + 6);
  r.bound_why = fmt::format("gamma_{}: sums of C = {} terms, then 6 roundings", in.cols + 6, in.cols);
  return r;
}

Reference ref_gelu(const kernels::RowsInput& in) {
  // Exact GELU, 0.5 x (1 + erf(x / √2)) (torch.nn.GELU's default).
  Reference r;
  r.value.resize(in.x.size());
  r.scale.resize(in.x.size());
  for (std::size_t i = 0; i < in.x.size(); ++i) {
    const double x = in.x[i];
    r.value[i] = 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
    r.scale[i] = std::abs(x);
  }
  r.bound = 4 * kUnitF32;
  r.bound_why = "4u: 0.5|x| (2u erff + 0.97u argument + 2u sum) + u product";
  return r;
}

Reference ref_softmax(const kernels::RowsInput& in) {
  Reference r;
  r.value.resize(in.x.size());
  r.scale.resize(in.x.size());
  double range = 0;
  for (int t = 0; t < in.rows; ++t) {
    const float* x = in.x.data() + static_cast<std::size_t>(t) * in.cols;
    double m = -std::numeric_limits<double>::infinity(), sum = 0;
    for (int c = 0; c < in.cols; ++c) m = std::max(m, static_cast<double>(x[c]));
    for (int c = 0; c < in.cols; ++c) sum += std::exp(x[c] - m);
    for (int c = 0; c < in.cols; ++c) {
      const double p = std::exp(x[c] - m) / sum;
      r.value[static_cast<std::size_t>(t) * in.cols + c] = p;
      r.scale[static_cast<std::size_t>(t) * in.cols + c] = p;
      range = std::max(range, m - x[c]);
    }
  }
  r.bound = gamma_f32(in.cols + 9) + 2 * kUnitF32 * range;
  r.bound_why = fmt::format("gamma_{} + 2uR: expf 4u twice, C-term sum, R = {:.3g}", in.cols + 9, range);
  return r;
}

Comparison compare(std::span<const float> got, const Reference& ref) {
  Comparison c;
  c.bound = ref.bound;
  if (got.size() != ref.value.size() || ref.scale.size() != ref.value.size()) return c;
  c.n = got.size();
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double g = got[i], want = ref.value[i];
    if (std::isnan(want)) {  // must still hold the poison
      if (!std::isnan(g)) {
        ++c.poison_lost;
        c.first_bad = std::min(c.first_bad, i);
      }
      continue;
    }
    if (!std::isfinite(g)) {
      ++c.non_finite;
      c.first_bad = std::min(c.first_bad, i);
      continue;
    }
    const double diff = std::abs(g - want);
    const double err = ref.scale[i] > 0 ? diff / ref.scale[i]
                                         : (diff == 0 ? 0.0 : std::numeric_limits<double>::infinity());
    if (err > c.error) c.error = err, c.worst = i;
  }
  c.passed = c.n > 0 && c.non_finite == 0 && c.poison_lost == 0 && c.error <= c.bound;
  return c;
}

}  // namespace kvlab::gpu

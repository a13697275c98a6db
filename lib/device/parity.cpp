#include "device/parity.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include <fmt/format.h>

#include "core/rng.hpp"

namespace kvlab::gpu {

namespace {

constexpr float kNaNf = std::numeric_limits<float>::quiet_NaN();

float stored(float x, kernels::Storage s, bool truncate) {
  if (s == kernels::Storage::f32) return x;
  if (!truncate) return round_to_bf16(x);
  return std::bit_cast<float>(std::bit_cast<std::uint32_t>(x) & 0xFFFF0000u);
}

std::vector<float> normals(Rng& rng, std::size_t n, double sd = 1.0, double mean = 0.0) {
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(mean + sd * rng.normal());
  return v;
}

/// A cache layout for `batch` sequences of up to `capacity` positions; paged: a pool of exactly
/// the blocks needed plus 3 spare, handed out in a seeded random order.
kernels::CacheLayout make_layout(Rng& rng, int batch, int n_kv, int hd, bool paged, int block_size, int capacity,
                                 kernels::Storage storage) {
  kernels::CacheLayout L;
  L.batch = batch, L.n_kv_head = n_kv, L.head_dim = hd, L.paged = paged, L.storage = storage;
  L.max_ctx = capacity;
  if (paged) {
    L.block_size = block_size;
    L.blocks_per_seq = (capacity + block_size - 1) / block_size;
    L.num_blocks = batch * L.blocks_per_seq + 3;
    std::vector<int> pool(L.num_blocks);
    std::iota(pool.begin(), pool.end(), 0);
    std::mt19937_64 engine(static_cast<std::uint64_t>(rng.uniform() * 0x1.0p53));
    std::shuffle(pool.begin(), pool.end(), engine);
    L.block_table.assign(pool.begin(), pool.begin() + static_cast<std::ptrdiff_t>(batch) * L.blocks_per_seq);
  }
  return L;
}

std::string layout_text(const kernels::CacheLayout& L) {
  return L.paged ? fmt::format("paged bs={} blocks={}", L.block_size, L.num_blocks) : "contiguous";
}

}  // namespace

// ---- the CPU stand-in ---------------------------------------------------------------------

kernels::KvAppendOutput CpuF32Runner::kv_append(const kernels::KvAppendInput& in) {
  const auto& L = in.layout;
  const std::size_t w = L.row_elems();
  kernels::KvAppendOutput out{std::vector<float>(L.elems(), kNaNf), std::vector<float>(L.elems(), kNaNf)};
  for (int b = 0; b < L.batch; ++b) {
    const int p = in.pos[b] + (faults_.append_wrong_slot ? 1 : 0);
    const std::size_t dst = L.slot(b, std::min(p, (L.paged ? L.blocks_per_seq * L.block_size : L.max_ctx) - 1)) * w;
    for (std::size_t e = 0; e < w; ++e) {
      out.k_cache[dst + e] = stored(in.k_new[b * w + e], L.storage, faults_.bf16_truncates);
      out.v_cache[dst + e] = stored(in.v_new[b * w + e], L.storage, faults_.bf16_truncates);
    }
  }
  return out;
}

std::vector<float> CpuF32Runner::rope(const kernels::RopeInput& in) {
  std::vector<float> y(in.x.size(), kNaNf);
  const int half = in.head_dim / 2;
  for (int b = 0; b < in.batch; ++b)
    for (int h = 0; h < in.n_heads; ++h)
      for (int i = 0; i < half; ++i) {
        float c, s;
        if (faults_.rope_float_angle) {
          const float angle = static_cast<float>(in.pos[b]) *
                              std::pow(static_cast<float>(in.theta), -2.0f * static_cast<float>(i) / in.head_dim);
          c = std::cos(angle), s = std::sin(angle);
        } else {
          const double angle = static_cast<double>(in.pos[b]) * std::pow(in.theta, -2.0 * i / in.head_dim);
          c = static_cast<float>(std::cos(angle)), s = static_cast<float>(std::sin(angle));
        }
        const std::size_t o = (static_cast<std::size_t>(b) * in.n_heads + h) * in.head_dim + i;
        const float a = in.x[o], bb = in.x[o + half];
        y[o] = a * c - bb * s;
        y[o + half] = a * s + bb * c;
      }
  if (faults_.skips_last_element && !y.empty()) y.back() = kNaNf;
  return y;
}

std::vector<float> CpuF32Runner::decode_attention(const kernels::DecodeAttentionInput& in) {
  // The GPU kernel's algorithm in float32: spans of kSpan positions, each with its own max, exp-sum
  // and un-normalised output, merged as flash-decoding does (kernels/decode_kernels.cu).
  constexpr int kSpan = 64;
  const auto& L = in.layout;
  const int hd = L.head_dim, kvw = L.n_kv_head * hd, group = in.n_head / L.n_kv_head;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  std::vector<float> out(in.q.size(), kNaNf);
  for (int b = 0; b < L.batch; ++b) {
    const int len = in.lengths[b] - (faults_.attention_drops_last && in.lengths[b] > 1 ? 1 : 0);
    const int spans = (len + kSpan - 1) / kSpan;
    for (int h = 0; h < in.n_head; ++h) {
      const int g = h / group;
      const float* q = in.q.data() + (static_cast<std::size_t>(b) * in.n_head + h) * hd;
      auto row = [&](int j) {
        if (L.paged && faults_.paged_ignores_table)
          return (static_cast<std::size_t>(b) * L.blocks_per_seq * L.block_size + j) * kvw + g * hd;
        return L.slot(b, j) * kvw + static_cast<std::size_t>(g) * hd;
      };
      std::vector<float> m(spans), l(spans), acc(static_cast<std::size_t>(spans) * hd, 0.0f), e(kSpan);
      for (int c = 0; c < spans; ++c) {
        const int j0 = c * kSpan, n = std::min(kSpan, len - j0);
        m[c] = -std::numeric_limits<float>::infinity();
        for (int jj = 0; jj < n; ++jj) {
          float dot = 0;
          for (int d = 0; d < hd; ++d) dot += q[d] * stored(in.k_cache[row(j0 + jj) + d], L.storage, faults_.bf16_truncates);
          e[jj] = dot * scale;
          m[c] = std::max(m[c], e[jj]);
        }
        l[c] = 0;
        for (int jj = 0; jj < n; ++jj) l[c] += e[jj] = std::exp(e[jj] - m[c]);
        for (int d = 0; d < hd; ++d)
          for (int jj = 0; jj < n; ++jj)
            acc[static_cast<std::size_t>(c) * hd + d] +=
                e[jj] * stored(in.v_cache[row(j0 + jj) + d], L.storage, faults_.bf16_truncates);
      }
      float M = -std::numeric_limits<float>::infinity(), total = 0;
      for (int c = 0; c < spans; ++c) M = std::max(M, m[c]);
      for (int c = 0; c < spans; ++c) total += std::exp(m[c] - M) * l[c];
      float* o = out.data() + (static_cast<std::size_t>(b) * in.n_head + h) * hd;
      for (int d = 0; d < hd; ++d) {
        float a = 0;
        for (int c = 0; c < spans; ++c) a += std::exp(m[c] - M) * acc[static_cast<std::size_t>(c) * hd + d];
        o[d] = a / total;
      }
    }
  }
  return out;
}

std::vector<float> CpuF32Runner::layer_norm(const kernels::RowsInput& in) {
  std::vector<float> y(in.x.size(), kNaNf);
  for (int t = 0; t < in.rows; ++t) {
    const float* x = in.x.data() + static_cast<std::size_t>(t) * in.cols;
    float mean = 0, var = 0;
    for (int c = 0; c < in.cols; ++c) mean += x[c];
    mean /= static_cast<float>(in.cols);
    for (int c = 0; c < in.cols; ++c) var += (x[c] - mean) * (x[c] - mean);
    var /= static_cast<float>(in.cols);
    const float inv = 1.0f / std::sqrt(var + (faults_.layer_norm_no_eps ? 0.0f : 1e-5f));
    for (int c = 0; c < in.cols; ++c)
      y[static_cast<std::size_t>(t) * in.cols + c] = (x[c] - mean) * inv * in.gain[c] + in.bias[c];
  }
  if (faults_.skips_last_element && !y.empty()) y.back() = kNaNf;
  return y;
}

std::vector<float> CpuF32Runner::gelu(const kernels::RowsInput& in) {
  std::vector<float> y(in.x.size());
  for (std::size_t i = 0; i < y.size(); ++i) y[i] = 0.5f * in.x[i] * (1.0f + std::erf(in.x[i] * 0.70710678118654752f));
  if (faults_.skips_last_element && !y.empty()) y.back() = kNaNf;
  return y;
}

std::vector<float> CpuF32Runner::softmax(const kernels::RowsInput& in) {
  std::vector<float> y(in.x.size(), kNaNf);
  for (int t = 0; t < in.rows; ++t) {
    const float* x = in.x.data() + static_cast<std::size_t>(t) * in.cols;
    float m = -std::numeric_limits<float>::infinity(), sum = 0;
    for (int c = 0; c < in.cols; ++c) m = std::max(m, x[c]);
    for (int c = 0; c < in.cols; ++c) sum += std::exp(x[c] - m);
    for (int c = 0; c < in.cols; ++c) y[static_cast<std::size_t>(t) * in.cols + c] = std::exp(x[c] - m) / sum;
  }
  if (faults_.skips_last_element && !y.empty()) y.back() = kNaNf;
  return y;
}

// ---- the cases ----------------------------------------------------------------------------

std::vector<ParityRow> run_parity(KernelRunner& runner, std::uint64_t seed, const std::string& only) {
  auto wanted = [&](const char* kernel) { return only.empty() || only == kernel; };
  Rng rng(seed);
  std::vector<ParityRow> rows;
  auto add = [&](std::string kernel, std::string shape, kernels::Storage st, std::span<const float> got,
                 const Reference& ref) {
    rows.push_back({std::move(kernel), std::move(shape), kernels::storage_name(st), compare(got, ref), ref.bound_why});
  };
  using kernels::Storage;

  // KV append: contiguous, paged (one block; many blocks, odd block size), both storages.
  struct AppendCase { int batch, n_kv, hd; bool paged; int block_size, capacity; };
  if (wanted("kv_append"))
  for (Storage st : {Storage::f32, Storage::bf16})
    for (const AppendCase& c : {AppendCase{3, 2, 40, false, 16, 37}, AppendCase{2, 1, 64, true, 16, 16},
                                AppendCase{4, 4, 128, true, 16, 200}, AppendCase{3, 3, 33, true, 7, 50}}) {
      kernels::KvAppendInput in;
      in.layout = make_layout(rng, c.batch, c.n_kv, c.hd, c.paged, c.block_size, c.capacity, st);
      const std::size_t w = in.layout.row_elems();
      in.k_new = normals(rng, c.batch * w), in.v_new = normals(rng, c.batch * w);
      for (int b = 0; b < c.batch; ++b) in.pos.push_back(static_cast<int>(rng.uniform() * c.capacity));
      const kernels::KvAppendOutput got = runner.kv_append(in);
      std::vector<float> both(got.k_cache);
      both.insert(both.end(), got.v_cache.begin(), got.v_cache.end());
      add("kv_append", fmt::format("B={} KV={} hd={} cap={} {}", c.batch, c.n_kv, c.hd, c.capacity, layout_text(in.layout)),
          st, both, ref_kv_append(in));
    }

  // RoPE: positions up to 8191 (where a float32 angle would be visibly off), odd head counts.
  struct RopeCase { int batch, heads, hd; double theta; };
  if (wanted("rope"))
  for (const RopeCase& c : {RopeCase{3, 5, 64, 10000.0}, RopeCase{2, 32, 128, 500000.0}, RopeCase{1, 1, 2, 10000.0}}) {
    kernels::RopeInput in;
    in.batch = c.batch, in.n_heads = c.heads, in.head_dim = c.hd, in.theta = c.theta;
    in.x = normals(rng, static_cast<std::size_t>(c.batch) * c.heads * c.hd);
    for (int b = 0; b < c.batch; ++b) in.pos.push_back(b == 0 ? 8191 : static_cast<int>(rng.uniform() * 8192));
    add("rope", fmt::format("B={} H={} hd={} theta={:g}", c.batch, c.heads, c.hd, c.theta), Storage::f32,
        runner.rope(in), ref_rope(in));
  }

  // Decode attention: GQA ratios 1, 4, 8 and MQA; odd head_dim and lengths; one block, many blocks.
  struct AttnCase { int batch, n_head, n_kv, hd; std::vector<int> lengths; bool paged; int block_size; };
  const std::vector<AttnCase> attn = {
      {3, 4, 4, 40, {1, 17, 63}, false, 16},          // MHA (ratio 1), odd lengths, a 1-position sequence
      {2, 16, 4, 64, {100, 257}, false, 16},          // GQA 4
      {2, 32, 4, 128, {1000, 2049}, false, 16},       // GQA 8, several spans per sequence
      {2, 8, 1, 128, {300, 5}, false, 16},            // MQA
      {2, 8, 2, 64, {16, 9}, true, 16},               // paged, one block per sequence
      {3, 32, 4, 128, {700, 1025, 33}, true, 16},     // paged GQA 8, many blocks
      {2, 6, 1, 96, {250, 61}, true, 7},              // paged MQA, odd block size
      {1, 12, 3, 200, {129}, true, 16},               // odd ratio 4 with a wide head
  };
  if (wanted("decode_attention"))
  for (Storage st : {Storage::f32, Storage::bf16})
    for (const AttnCase& c : attn) {
      if (st == Storage::bf16 && !c.paged && c.n_kv == 4 && c.hd == 64) continue;  // keep the table short
      kernels::DecodeAttentionInput in;
      const int cap = *std::max_element(c.lengths.begin(), c.lengths.end());
      in.layout = make_layout(rng, c.batch, c.n_kv, c.hd, c.paged, c.block_size, cap, st);
      in.n_head = c.n_head;
      in.q = normals(rng, static_cast<std::size_t>(c.batch) * c.n_head * c.hd);
      in.k_cache = normals(rng, in.layout.elems());
      in.v_cache = normals(rng, in.layout.elems());
      in.lengths = c.lengths;
      std::string lens;
      for (int len : c.lengths) {
        if (!lens.empty()) lens += ',';
        lens += std::to_string(len);
      }
      add("decode_attention",
          fmt::format("B={} H={} KV={} hd={} len={} {}", c.batch, c.n_head, c.n_kv, c.hd, lens, layout_text(in.layout)),
          st, runner.decode_attention(in), ref_decode_attention(in));
    }

  // LayerNorm (inputs offset by 3: the mean must be taken out first), GELU over [-10, 10], softmax
  // with logits of spread up to +-10.
  if (wanted("layer_norm"))
  for (int cols : {1, 7, 256, 1000, 4099}) {
    kernels::RowsInput in;
    in.rows = 5, in.cols = cols;
    in.x = normals(rng, static_cast<std::size_t>(5) * cols, 1.0, 3.0);
    in.gain = normals(rng, cols, 0.2, 1.0), in.bias = normals(rng, cols, 0.1);
    add("layer_norm", fmt::format("rows=5 C={}", cols), Storage::f32, runner.layer_norm(in), ref_layer_norm(in));
  }
  if (wanted("gelu"))
  {
    kernels::RowsInput in;
    in.rows = 3, in.cols = 1001;
    for (int i = 0; i < 3 * 1001; ++i) in.x.push_back(static_cast<float>(-10.0 + 20.0 * rng.uniform()));
    add("gelu", "rows=3 C=1001 x in [-10, 10]", Storage::f32, runner.gelu(in), ref_gelu(in));
  }
  if (wanted("softmax"))
  for (int cols : {1, 33, 1000, 50257}) {
    kernels::RowsInput in;
    in.rows = 4, in.cols = cols;
    in.x = normals(rng, static_cast<std::size_t>(4) * cols, 3.0);
    add("softmax", fmt::format("rows=4 C={}", cols), Storage::f32, runner.softmax(in), ref_softmax(in));
  }
  return rows;
}

}  // namespace kvlab::gpu

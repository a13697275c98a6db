#include "model/fast_gpt.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "model/f32_kernels.hpp"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace kvlab {
namespace {

// W [in, out] (the reference layout) -> W^T [out, in] appended to `dst`.
void append_transposed(StreamedFloats& dst, const Mat<float>& w) {
  const auto in = w.rows(), out = w.cols();
  const std::size_t base = dst.size();
  dst.resize(base + static_cast<std::size_t>(in * out));
  for (Eigen::Index o = 0; o < out; ++o)
    for (Eigen::Index i = 0; i < in; ++i) dst[base + static_cast<std::size_t>(o * in + i)] = w(i, o);
}

StreamedFloats copy(const Vec<float>& v) { return StreamedFloats(v.data(), v.data() + v.size()); }

// x[r, :] = wte[tokens[r], :] (+ wpe[pos0 + r·step, :] with learned positions) for every row r
// (step 1: consecutive positions; step 0: a decode batch, every row at pos0). x: [tokens, d].
// Throws InputError for an id outside [0, vocab).
void embed_rows(std::span<const int> tokens, int pos0, int step, const StreamedFloats& wte, const StreamedFloats& wpe,
                int d, int vocab, float* x) {
  for (std::size_t r = 0; r < tokens.size(); ++r) {
    if (tokens[r] < 0 || tokens[r] >= vocab)
      throw InputError(fmt::format("token: id {} outside [0, {})", tokens[r], vocab));
    float* xr = x + r * static_cast<std::size_t>(d);
    std::copy_n(wte.data() + static_cast<std::size_t>(tokens[r]) * d, d, xr);
    if (!wpe.empty()) {
      const std::size_t pos = static_cast<std::size_t>(pos0) + r * static_cast<std::size_t>(step);
      for (int i = 0; i < d; ++i) xr[i] += wpe[pos * d + i];
    }
  }
}

// LayerNorm of `rows` rows of width C (biased variance, eps 1e-5, as model/ops.cpp), x -> y.
void layer_norm_rows(const float* x, int rows, int C, const float* g, const float* b, float* y) {
#pragma omp parallel for schedule(static) if (static_cast<long long>(rows) * C >= (1 << 16))
  for (int r = 0; r < rows; ++r) {
    const float* xr = x + static_cast<std::ptrdiff_t>(r) * C;
    float* yr = y + static_cast<std::ptrdiff_t>(r) * C;
    float mean = 0;
    for (int c = 0; c < C; ++c) mean += xr[c];
    mean /= static_cast<float>(C);
    float var = 0;
    for (int c = 0; c < C; ++c) var += (xr[c] - mean) * (xr[c] - mean);
    var /= static_cast<float>(C);
    const float inv = 1.0f / std::sqrt(var + 1e-5f);
    for (int c = 0; c < C; ++c) yr[c] = (xr[c] - mean) * inv * g[c] + b[c];
  }
}

void gelu_rows(float* x, std::size_t n) {
  const float inv_sqrt2 = 0.70710678118654752440f;
#pragma omp parallel for schedule(static) if (n >= (1u << 16))
  for (std::ptrdiff_t i = 0; i < static_cast<std::ptrdiff_t>(n); ++i) x[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * inv_sqrt2));
}

void check_size(const char* what, int v) {
  if (v < 1 || v > (1 << 20)) throw InputError(fmt::format("{}: must be in [1, 1048576] (got {})", what, v));
}

}  // namespace

std::uint64_t streamed_parameters(const ModelConfig& c) {
  const std::uint64_t d = c.d_model, q_w = static_cast<std::uint64_t>(c.n_head) * c.head_dim, kv_w = c.kv_width();
  const std::uint64_t per_layer = d * (q_w + 2 * kv_w) + (q_w + 2 * kv_w) + q_w * d + d + 8 * d * d + 4 * d + d + 4 * d;
  return c.n_layer * per_layer + 2 * d + d * c.vocab_size;
}

StepCost decode_step_cost(const ModelConfig& c, int batch, int ctx) {
  if (batch < 1 || ctx < 0) throw std::invalid_argument("decode_step_cost: batch >= 1 and ctx >= 0");
  const double q_w = static_cast<double>(c.n_head) * c.head_dim, kv_w = c.kv_width(), L = c.n_layer, B = batch;
  const double params = static_cast<double>(streamed_parameters(c));
  StepCost s;
  s.bytes = 4.0 * params + 4.0 * B * L * 2.0 * kv_w * (ctx + 1.0) + 4.0 * B * 2.0 * c.d_model;  // weights, KV, wte/wpe rows
  s.flops = 2.0 * params * B + 4.0 * B * L * (ctx + 1.0) * q_w;
  return s;
}

StepCost verify_step_cost(const ModelConfig& c, int rows, int ctx) {
  if (rows < 1 || ctx < 0) throw std::invalid_argument("verify_step_cost: rows >= 1 and ctx >= 0");
  const double q_w = static_cast<double>(c.n_head) * c.head_dim, kv_w = c.kv_width(), L = c.n_layer, R = rows;
  const double params = static_cast<double>(streamed_parameters(c));
  StepCost s;
  s.bytes = 4.0 * params + 4.0 * L * 2.0 * kv_w * (ctx + R) + 4.0 * R * 2.0 * c.d_model;
  s.flops = 2.0 * params * R + 4.0 * L * q_w * (R * ctx + R * (R + 1.0) / 2.0);
  return s;
}

StepCost prefill_cost(const ModelConfig& c, int len) {
  if (len < 1) throw std::invalid_argument("prefill_cost: len >= 1");
  const double q_w = static_cast<double>(c.n_head) * c.head_dim, kv_w = c.kv_width(), L = c.n_layer, T = len;
  const double params = static_cast<double>(streamed_parameters(c));
  StepCost s;
  s.bytes = 4.0 * params + 4.0 * L * 2.0 * kv_w * T + 4.0 * T * 2.0 * c.d_model;
  const double lm_head = static_cast<double>(c.d_model) * c.vocab_size;  // only the last token's logits
  s.flops = 2.0 * (params - lm_head) * T + 2.0 * lm_head + 4.0 * L * q_w * T * (T + 1.0) / 2.0;
  return s;
}

const char* fast_gemm_backend() {
#ifdef KVLAB_HAVE_OPENBLAS
  return "OpenBLAS sgemm";
#else
  return "Eigen GEMM, output split across OpenMP threads";
#endif
}

int fast_threads() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

FastGpt::FastGpt(const MiniGPT<float>& ref, int max_batch, int max_ctx, int max_prompt, std::int64_t max_cached_tokens,
                 FastOptions opts)
    : c_(ref.config()), opts_(opts), max_batch_(max_batch), max_ctx_(max_ctx), max_prompt_(max_prompt) {
  if (opts.layers < 0 || opts.layers > c_.n_layer)
    throw InputError(fmt::format("layers: the draft keeps 0 (all) to n_layer = {} blocks (got {})", c_.n_layer, opts.layers));
  if (opts.weights != FastWeights::f32 && (c_.d_model % 8 != 0 || (c_.n_head * c_.head_dim) % 8 != 0))
    throw InputError(fmt::format("fast path: quantized weights need d_model and n_head x head_dim multiples of 8 (got {} "
                                 "and {})", c_.d_model, c_.n_head * c_.head_dim));
  if (opts.layers > 0) c_.n_layer = opts.layers;
  check_size("max_batch", max_batch);
  check_size("max_ctx", max_ctx);
  check_size("max_prompt", max_prompt);
  if (c_.sliding_window > 0 || c_.cla_share != 1 || !c_.causal)
    throw InputError("fast path: supports causal attention without sliding window or CLA");
  if (max_prompt > max_ctx) throw InputError(fmt::format("max_prompt: must be <= max_ctx = {} (got {})", max_ctx, max_prompt));
  if (c_.positional == Positional::learned && max_ctx > c_.block_size)
    throw InputError(fmt::format("max_ctx: must be <= block_size = {} with learned positions (got {})", c_.block_size, max_ctx));
  const int d = c_.d_model;
  q_w_ = c_.n_head * c_.head_dim;
  kv_w_ = c_.kv_width();
  threads_ = fast_threads();
  max_rows_ = std::max(max_batch, max_prompt);
  const auto& w = ref.weights();
  wte_.assign(w.wte.data(), w.wte.data() + w.wte.size());
  if (c_.positional == Positional::learned) wpe_.assign(w.wpe.data(), w.wpe.data() + w.wpe.size());
  for (int li = 0; li < c_.n_layer; ++li) {
    const auto& b = w.blocks[static_cast<std::size_t>(li)];
    Layer l;
    StreamedFloats qkv, o, fc, proj;
    l.ln1_g = copy(b.ln1_gain), l.ln1_b = copy(b.ln1_bias);
    append_transposed(qkv, b.w_q);
    append_transposed(qkv, b.w_k);
    append_transposed(qkv, b.w_v);
    l.wqkv_t = make_matrix(std::move(qkv), q_w_ + 2 * kv_w_, d);
    l.bqkv = copy(b.b_q);
    l.bqkv.insert(l.bqkv.end(), b.b_k.data(), b.b_k.data() + b.b_k.size());
    l.bqkv.insert(l.bqkv.end(), b.b_v.data(), b.b_v.data() + b.b_v.size());
    append_transposed(o, b.w_o);
    l.wo_t = make_matrix(std::move(o), d, q_w_);
    l.bo = copy(b.b_o);
    l.ln2_g = copy(b.ln2_gain), l.ln2_b = copy(b.ln2_bias);
    append_transposed(fc, b.w_fc);
    l.wfc_t = make_matrix(std::move(fc), 4 * d, d);
    l.bfc = copy(b.b_fc);
    append_transposed(proj, b.w_proj);
    l.wproj_t = make_matrix(std::move(proj), d, 4 * d);
    l.bproj = copy(b.b_proj);
    layers_.push_back(std::move(l));
  }
  lnf_g_ = copy(w.lnf_gain), lnf_b_ = copy(w.lnf_bias);
  StreamedFloats lm;
  append_transposed(lm, w.w_lm);
  wlm_t_ = make_matrix(std::move(lm), c_.vocab_size, d);
  const std::int64_t full = static_cast<std::int64_t>(max_batch) * max_ctx;
  cache_tokens_ = max_cached_tokens > 0 ? std::min(full, max_cached_tokens) : full;
  if (cache_tokens_ < max_ctx)
    throw InputError(fmt::format("max_cached_tokens: must be >= max_ctx = {} (got {})", max_ctx, cache_tokens_));
  batch_cap_ = static_cast<int>(std::min<std::int64_t>(max_batch, cache_tokens_ / max_ctx));
  ctx_cap_ = max_ctx;
  const std::size_t cache = static_cast<std::size_t>(c_.n_layer) * static_cast<std::size_t>(cache_tokens_) * kv_w_;
  k_.assign(cache, 0.0f);
  v_.assign(cache, 0.0f);
  const std::size_t R = static_cast<std::size_t>(max_rows_);
  x_.assign(R * d, 0.0f);
  h_.assign(R * d, 0.0f);
  qkv_.assign(R * (q_w_ + 2 * kv_w_), 0.0f);
  att_.assign(R * q_w_, 0.0f);
  m_.assign(R * 4 * d, 0.0f);
  scores_.assign(static_cast<std::size_t>(threads_) * c_.n_head * kDecodeChunk, 0.0f);
  // Decode tasks: batch x ceil(ctx / kDecodeChunk) <= cache_tokens / kDecodeChunk + batch for any shape.
  const std::size_t tasks = static_cast<std::size_t>(cache_tokens_ / kDecodeChunk + max_batch + 1);
  part_m_.assign(tasks * c_.n_head, 0.0f);
  part_l_.assign(tasks * c_.n_head, 0.0f);
  part_out_.assign(tasks * q_w_, 0.0f);
  prefill_scores_.assign(static_cast<std::size_t>(threads_) * kPrefillBlock * max_ctx, 0.0f);
  const std::size_t verify_slots = static_cast<std::size_t>(kVerifyRows) * (max_ctx / kDecodeChunk + 1);
  if (max_ctx > kVerifyFrom && verify_slots * (q_w_ + 2 * c_.n_head) * sizeof(float) <= (std::size_t{64} << 20)) {
    verify_m_.assign(verify_slots * c_.n_head, 0.0f);
    verify_l_.assign(verify_slots * c_.n_head, 0.0f);
    verify_out_.assign(verify_slots * q_w_, 0.0f);
  }
  if (c_.positional == Positional::rope) {
    const int half = c_.head_dim / 2;
    rope_cos_.resize(static_cast<std::size_t>(max_ctx) * half);
    rope_sin_.resize(rope_cos_.size());
    for (int p = 0; p < max_ctx; ++p)
      for (int i = 0; i < half; ++i) {
        const double angle = p * std::pow(c_.rope_theta, -2.0 * i / c_.head_dim);  // as attention/gqa.cpp
        rope_cos_[static_cast<std::size_t>(p) * half + i] = static_cast<float>(std::cos(angle));
        rope_sin_[static_cast<std::size_t>(p) * half + i] = static_cast<float>(std::sin(angle));
      }
  }
}

FastGpt::Matrix FastGpt::make_matrix(StreamedFloats wt, int out, int in) const {
  Matrix m;
  m.out = out, m.in = in;
  if (opts_.weights == FastWeights::f32) {
    m.f = std::move(wt);
    return m;
  }
  const int bits = opts_.weights == FastWeights::int8 ? 8 : 4;
  m.q.assign(static_cast<std::size_t>(out) * in * bits / 8, 0);
  m.scale.assign(static_cast<std::size_t>(out), 0.0f);
  quantize_rows(wt.data(), out, in, bits, m.q.data(), m.scale.data());
  return m;
}

void FastGpt::linear(const Matrix& w, const float* x, int rows, const float* bias, float* y, int ldy) const {
  switch (opts_.weights) {
    case FastWeights::f32: linear_f32(x, rows, w.in, w.f.data(), bias, w.out, y, ldy); return;
    case FastWeights::int8:
      linear_q8(x, rows, w.in, reinterpret_cast<const std::int8_t*>(w.q.data()), w.scale.data(), bias, w.out, y, ldy);
      return;
    case FastWeights::int4: linear_q4(x, rows, w.in, w.q.data(), w.scale.data(), bias, w.out, y, ldy); return;
  }
}

double FastGpt::streamed_weight_bytes() const {
  auto bytes = [](const Matrix& m) { return 4.0 * (m.f.size() + m.scale.size()) + static_cast<double>(m.q.size()); };
  double b = 4.0 * (lnf_g_.size() + lnf_b_.size()) + bytes(wlm_t_);
  for (const auto& l : layers_)
    b += bytes(l.wqkv_t) + bytes(l.wo_t) + bytes(l.wfc_t) + bytes(l.wproj_t) +
         4.0 * (l.ln1_g.size() + l.ln1_b.size() + l.bqkv.size() + l.bo.size() + l.ln2_g.size() + l.ln2_b.size() +
                l.bfc.size() + l.bproj.size());
  return b;
}

void FastGpt::truncate(int len) {
  if (len < 0 || len > len_) throw InputError(fmt::format("truncate: length must be in [0, {}] (got {})", len_, len));
  len_ = len;
}

void FastGpt::extend(std::span<const int> tokens, std::span<float> logits) {
  const int T = static_cast<int>(tokens.size()), d = c_.d_model, V = c_.vocab_size;
  if (T < 1 || T > max_rows_)
    throw InputError(fmt::format("extend: tokens must number 1 to {} (got {})", max_rows_, T));
  if (static_cast<std::int64_t>(len_) + T > ctx_cap_)
    throw InputError(fmt::format("extend: the cache holds {} of {} positions; {} more do not fit", len_, ctx_cap_, T));
  if (logits.size() < static_cast<std::size_t>(T) * V) throw std::invalid_argument("extend: logits too small");
  embed_rows(tokens, len_, 1, wte_, wpe_, d, V, x_.data());
  for (int l = 0; l < c_.n_layer; ++l) layer_forward(T, l, Pass::prefill, len_);
  len_ += T;
  layer_norm_rows(x_.data(), T, d, lnf_g_.data(), lnf_b_.data(), h_.data());
  linear(wlm_t_, h_.data(), T, nullptr, logits.data(), V);
}

void FastGpt::extend_window(std::span<const int> tokens, int pos, AttentionWindow window, std::span<float> logits) {
  const int T = static_cast<int>(tokens.size()), d = c_.d_model, V = c_.vocab_size;
  if (T < 1 || T > max_rows_)
    throw InputError(fmt::format("extend_window: tokens must number 1 to {} (got {})", max_rows_, T));
  if (pos < 0 || static_cast<std::int64_t>(pos) + T > ctx_cap_)
    throw InputError(fmt::format("extend_window: positions {} .. {} must lie in [0, {})", pos, static_cast<std::int64_t>(pos) + T - 1,
                                 ctx_cap_));
  if (window.sink < 0 || window.recent < 1)
    throw InputError(fmt::format("window: sink must be >= 0 and recent >= 1 (got {} and {})", window.sink, window.recent));
  if (logits.size() < static_cast<std::size_t>(T) * V) throw std::invalid_argument("extend_window: logits too small");
  embed_rows(tokens, pos, 1, wte_, wpe_, d, V, x_.data());
  for (int l = 0; l < c_.n_layer; ++l) layer_forward(T, l, Pass::window, pos, window);
  layer_norm_rows(x_.data(), T, d, lnf_g_.data(), lnf_b_.data(), h_.data());
  linear(wlm_t_, h_.data(), T, nullptr, logits.data(), V);
}

void FastGpt::set_shape(int batch, int ctx) {
  if (batch < 1 || batch > max_batch_ || ctx < 1 || ctx > max_ctx_ ||
      static_cast<std::int64_t>(batch) * ctx > cache_tokens_)
    throw InputError(fmt::format("shape: batch {} x ctx {} must fit batch <= {}, ctx <= {}, batch x ctx <= {}", batch,
                                 ctx, max_batch_, max_ctx_, cache_tokens_));
  batch_cap_ = batch;
  ctx_cap_ = ctx;
  len_ = 0;
}

void FastGpt::set_length(int len) {
  if (len < 0 || len > ctx_cap_) throw InputError(fmt::format("length: must be in [0, {}] (got {})", ctx_cap_, len));
  len_ = len;
}

void FastGpt::fill_cache(std::uint64_t seed) {
  Rng rng(seed);
  // Cheap values of the right magnitude; a benchmark only needs the bytes to be there.
  float a = static_cast<float>(rng.normal());
  for (std::size_t i = 0; i < k_.size(); ++i) {
    a = a * 0.999f + 0.01f * static_cast<float>((i * 2654435761u) % 1000) / 1000.0f;
    k_[i] = a;
    v_[i] = -a;
  }
}

// One block on rows 0..rows-1 of x_. Decode: row b is sequence b's new token at position pos0.
// Prefill and window: row t is sequence 0's token at position pos0 + t.
void FastGpt::layer_forward(int rows, int l, Pass pass, int pos0, AttentionWindow window) {
  const bool decode = pass == Pass::decode;
  const int d = c_.d_model, hd = c_.head_dim, qkv_w = q_w_ + 2 * kv_w_, group = c_.group_size();
  const Layer& L = layers_[l];
  layer_norm_rows(x_.data(), rows, d, L.ln1_g.data(), L.ln1_b.data(), h_.data());
  linear(L.wqkv_t, h_.data(), rows, L.bqkv.data(), qkv_.data(), qkv_w);
  if (c_.positional == Positional::rope) {
    const int half = hd / 2, heads = c_.n_head + c_.n_kv_head;  // q heads then k heads, contiguous
    for (int r = 0; r < rows; ++r) {
      const int p = decode ? pos0 : pos0 + r;
      const float* cs = rope_cos_.data() + static_cast<std::size_t>(p) * half;
      const float* sn = rope_sin_.data() + static_cast<std::size_t>(p) * half;
      float* row = qkv_.data() + static_cast<std::size_t>(r) * qkv_w;
      for (int h = 0; h < heads; ++h)
        for (int i = 0; i < half; ++i) {
          float& a = row[h * hd + i];
          float& b = row[h * hd + i + half];
          const float a0 = a, b0 = b;
          a = a0 * cs[i] - b0 * sn[i];
          b = a0 * sn[i] + b0 * cs[i];
        }
    }
  }
  // New K/V rows into the cache (a window pass leaves the positions the model holds as they are).
  for (int r = 0; r < rows; ++r) {
    const int b = decode ? r : 0, t = decode ? pos0 : pos0 + r;
    if (pass == Pass::window && t < len_) continue;
    const float* row = qkv_.data() + static_cast<std::size_t>(r) * qkv_w;
    std::copy(row + q_w_, row + q_w_ + kv_w_, k_at(l, b, t));
    std::copy(row + q_w_ + kv_w_, row + qkv_w, v_at(l, b, t));
  }
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  if (decode) {
    // Flash-decoding: every sequence's cached positions in chunks of kDecodeChunk, one task per
    // (sequence, chunk) reading its K and V rows once, front to back, for all heads; then each
    // sequence's chunks are joined by their softmax statistics (f32_kernels.hpp).
    const int n_ctx = pos0 + 1, chunks = (n_ctx + kDecodeChunk - 1) / kDecodeChunk, tasks = rows * chunks;
    const bool threaded = static_cast<long long>(rows) * n_ctx * q_w_ >= (1ll << 18);  // as kParallelMacs
#pragma omp parallel for schedule(dynamic, 1) if (threaded && tasks > 1)
    for (int task = 0; task < tasks; ++task) {
#ifdef _OPENMP
      const int tid = omp_get_thread_num();
#else
      const int tid = 0;
#endif
      const int b = task / chunks, j0 = (task % chunks) * kDecodeChunk, n = std::min(kDecodeChunk, n_ctx - j0);
      attend_chunk_f32(qkv_.data() + static_cast<std::size_t>(b) * qkv_w, c_.n_head, c_.n_kv_head, hd, k_at(l, b, j0),
                       v_at(l, b, j0), kv_w_, n, scale,
                       scores_.data() + static_cast<std::size_t>(tid) * c_.n_head * kDecodeChunk,
                       part_m_.data() + static_cast<std::size_t>(task) * c_.n_head,
                       part_l_.data() + static_cast<std::size_t>(task) * c_.n_head,
                       part_out_.data() + static_cast<std::size_t>(task) * q_w_);
    }
#pragma omp parallel for schedule(static) if (threaded && rows > 1)
    for (int b = 0; b < rows; ++b) {
      const std::size_t t0 = static_cast<std::size_t>(b) * chunks;
      combine_chunks_f32(chunks, c_.n_head, hd, part_m_.data() + t0 * c_.n_head, part_l_.data() + t0 * c_.n_head,
                         part_out_.data() + t0 * q_w_, att_.data() + static_cast<std::size_t>(b) * q_w_);
    }
  } else if (pass == Pass::window) {
    // Window: row r (position p = pos0 + r) attends to [0, sink_end) and [recent_begin, p + 1),
    // read in place, each range split in chunks of kDecodeChunk from its start as decode splits
    // [0, p + 1); when the window covers the whole prefix, one range [0, p + 1), chunked exactly as
    // decode chunks it (the same sums in the same order: bit for bit decode's result).
    for (int r = 0; r < rows; ++r) {
      const int n_ctx = pos0 + r + 1;
      const bool whole = static_cast<long long>(window.sink) + window.recent >= n_ctx;
      const int sink_end = whole ? n_ctx : window.sink, recent_begin = whole ? n_ctx : n_ctx - window.recent;
      const int c1 = (sink_end + kDecodeChunk - 1) / kDecodeChunk;
      const int tasks = c1 + (n_ctx - recent_begin + kDecodeChunk - 1) / kDecodeChunk;
      const int seen = sink_end + (n_ctx - recent_begin);
      const bool threaded = static_cast<long long>(seen) * q_w_ >= (1ll << 18);  // as decode's
      const float* q = qkv_.data() + static_cast<std::size_t>(r) * qkv_w;
#pragma omp parallel for schedule(dynamic, 1) if (threaded && tasks > 1)
      for (int task = 0; task < tasks; ++task) {
#ifdef _OPENMP
        const int tid = omp_get_thread_num();
#else
        const int tid = 0;
#endif
        const int j0 = task < c1 ? task * kDecodeChunk : recent_begin + (task - c1) * kDecodeChunk;
        const int n = std::min(kDecodeChunk, (task < c1 ? sink_end : n_ctx) - j0);
        attend_chunk_f32(q, c_.n_head, c_.n_kv_head, hd, k_at(l, 0, j0), v_at(l, 0, j0), kv_w_, n, scale,
                         scores_.data() + static_cast<std::size_t>(tid) * c_.n_head * kDecodeChunk,
                         part_m_.data() + static_cast<std::size_t>(task) * c_.n_head,
                         part_l_.data() + static_cast<std::size_t>(task) * c_.n_head,
                         part_out_.data() + static_cast<std::size_t>(task) * q_w_);
      }
      combine_chunks_f32(tasks, c_.n_head, hd, part_m_.data(), part_l_.data(), part_out_.data(),
                         att_.data() + static_cast<std::size_t>(r) * q_w_);
    }
  } else if (rows <= kVerifyRows && pos0 >= kVerifyFrom && !verify_m_.empty()) {
    // A verify step over a long prefix: decode's chunks of [0, pos0 + rows), one task per chunk
    // reading its K/V rows once for every row (row t sees positions up to pos0 + t: its chunks are
    // decode's for that position, so its attention is decode's bit for bit), then each row's
    // chunks joined. The per-head GEMMs below would pack every head's K/V slice first.
    const int chunks = (pos0 + rows + kDecodeChunk - 1) / kDecodeChunk;
    const bool threaded = static_cast<long long>(rows) * (pos0 + rows) * q_w_ >= (1ll << 18);
#pragma omp parallel for schedule(dynamic, 1) if (threaded && chunks > 1)
    for (int chunk = 0; chunk < chunks; ++chunk) {
#ifdef _OPENMP
      const int tid = omp_get_thread_num();
#else
      const int tid = 0;
#endif
      const int j0 = chunk * kDecodeChunk;
      for (int r = 0; r < rows; ++r) {
        const int n = std::min(kDecodeChunk, pos0 + r + 1 - j0);
        if (n < 1) continue;  // past this row's position
        const std::size_t slot = static_cast<std::size_t>(r) * chunks + chunk;
        attend_chunk_f32(qkv_.data() + static_cast<std::size_t>(r) * qkv_w, c_.n_head, c_.n_kv_head, hd, k_at(l, 0, j0),
                         v_at(l, 0, j0), kv_w_, n, scale,
                         scores_.data() + static_cast<std::size_t>(tid) * c_.n_head * kDecodeChunk,
                         verify_m_.data() + slot * c_.n_head, verify_l_.data() + slot * c_.n_head,
                         verify_out_.data() + slot * q_w_);
      }
    }
    for (int r = 0; r < rows; ++r) {
      const std::size_t slot = static_cast<std::size_t>(r) * chunks;
      combine_chunks_f32((pos0 + r + kDecodeChunk) / kDecodeChunk, c_.n_head, hd, verify_m_.data() + slot * c_.n_head,
                         verify_l_.data() + slot * c_.n_head, verify_out_.data() + slot * q_w_,
                         att_.data() + static_cast<std::size_t>(r) * q_w_);
    }
  } else {
    // Prefill: per (head, block of kPrefillBlock queries), one OpenMP task: S = Q K^T over the keys
    // the block may see (a GEMM), a causal softmax, then O = P V (a GEMM).
    // Small products (a verify step of K + 1 tokens at a short context) stay on the calling thread,
    // as decode's: waking the other threads costs more than the work.
    const int blocks = (rows + kPrefillBlock - 1) / kPrefillBlock, tasks = c_.n_head * blocks;
    const bool threaded = static_cast<long long>(rows) * (pos0 + rows) * q_w_ >= (1ll << 18);
#pragma omp parallel for schedule(dynamic, 1) if (threaded)
    for (int task = 0; task < tasks; ++task) {
#ifdef _OPENMP
      const int tid = omp_get_thread_num();
#else
      const int tid = 0;
#endif
      const int h = task / blocks, g = h / group, i0 = (task % blocks) * kPrefillBlock;
      const int n = std::min(kPrefillBlock, rows - i0), keys = pos0 + i0 + n;
      float* S = prefill_scores_.data() + static_cast<std::size_t>(tid) * kPrefillBlock * max_ctx_;
      gemm_f32(n, keys, hd, qkv_.data() + static_cast<std::size_t>(i0) * qkv_w + h * hd, qkv_w, k_at(l, 0, 0) + g * hd,
               kv_w_, true, S, keys);
      for (int r = 0; r < n; ++r) {
        float* sr = S + static_cast<std::size_t>(r) * keys;
        const int vis = pos0 + i0 + r + 1;
        float mx = -std::numeric_limits<float>::infinity();
        for (int j = 0; j < vis; ++j) mx = std::max(mx, sr[j] *= scale);
        float den = 0;
        for (int j = 0; j < vis; ++j) den += (sr[j] = std::exp(sr[j] - mx));
        const float inv = 1.0f / den;
        for (int j = 0; j < vis; ++j) sr[j] *= inv;
        std::fill(sr + vis, sr + keys, 0.0f);
      }
      gemm_f32(n, hd, keys, S, keys, v_at(l, 0, 0) + g * hd, kv_w_, false,
               att_.data() + static_cast<std::size_t>(i0) * q_w_ + h * hd, q_w_);
    }
  }
  // x += att Wo + bo; x += GELU(LN2(x) Wfc + bfc) Wproj + bproj (residuals through h_ as scratch).
  linear(L.wo_t, att_.data(), rows, L.bo.data(), h_.data(), d);
  for (std::size_t i = 0; i < static_cast<std::size_t>(rows) * d; ++i) x_[i] += h_[i];
  layer_norm_rows(x_.data(), rows, d, L.ln2_g.data(), L.ln2_b.data(), h_.data());
  linear(L.wfc_t, h_.data(), rows, L.bfc.data(), m_.data(), 4 * d);
  gelu_rows(m_.data(), static_cast<std::size_t>(rows) * 4 * d);
  linear(L.wproj_t, m_.data(), rows, L.bproj.data(), h_.data(), d);
  for (std::size_t i = 0; i < static_cast<std::size_t>(rows) * d; ++i) x_[i] += h_[i];
}

void FastGpt::decode(std::span<const int> tokens, std::span<float> logits) {
  const int B = static_cast<int>(tokens.size()), d = c_.d_model;
  if (B < 1 || B > batch_cap_) throw InputError(fmt::format("batch: must be in [1, {}] (got {})", batch_cap_, B));
  if (len_ >= ctx_cap_) throw InputError(fmt::format("decode: the cache is full ({} positions)", ctx_cap_));
  if (logits.size() < static_cast<std::size_t>(B) * c_.vocab_size) throw std::invalid_argument("decode: logits too small");
  embed_rows(tokens, len_, 0, wte_, wpe_, d, c_.vocab_size, x_.data());
  for (int l = 0; l < c_.n_layer; ++l) layer_forward(B, l, Pass::decode, len_);
  layer_norm_rows(x_.data(), B, d, lnf_g_.data(), lnf_b_.data(), h_.data());
  linear(wlm_t_, h_.data(), B, nullptr, logits.data(), c_.vocab_size);
  ++len_;
}

void FastGpt::prefill(std::span<const int> prompt, std::span<float> last_logits, std::span<float> all_logits) {
  const int T = static_cast<int>(prompt.size()), d = c_.d_model, V = c_.vocab_size;
  if (T < 1 || T > max_prompt_ || T > ctx_cap_)
    throw InputError(fmt::format("prompt: length must be in [1, {}] (got {})", std::min(max_prompt_, ctx_cap_), T));
  if (last_logits.size() < static_cast<std::size_t>(V) ||
      (!all_logits.empty() && all_logits.size() < static_cast<std::size_t>(T) * V))
    throw std::invalid_argument("prefill: logits too small");
  embed_rows(prompt, 0, 1, wte_, wpe_, d, V, x_.data());
  len_ = 0;
  for (int l = 0; l < c_.n_layer; ++l) layer_forward(T, l, Pass::prefill, 0);
  len_ = T;
  if (!all_logits.empty()) {
    layer_norm_rows(x_.data(), T, d, lnf_g_.data(), lnf_b_.data(), h_.data());
    linear(wlm_t_, h_.data(), T, nullptr, all_logits.data(), V);
    std::copy_n(all_logits.data() + static_cast<std::size_t>(T - 1) * V, V, last_logits.data());
  } else {  // only the last token's logits (as a serving prefill does)
    const float* xl = x_.data() + static_cast<std::size_t>(T - 1) * d;
    layer_norm_rows(xl, 1, d, lnf_g_.data(), lnf_b_.data(), h_.data());
    linear(wlm_t_, h_.data(), 1, nullptr, last_logits.data(), V);
  }
}

}  // namespace kvlab

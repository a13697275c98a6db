#include "model/device_gpt.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/rng.hpp"

namespace kvlab::gpu {

namespace {

constexpr int kMaxSize = kernels::kMaxAttentionRows;  // a prefill of max_ctx tokens is max_ctx attention rows

std::size_t storage_bytes(kernels::Storage s) { return s == kernels::Storage::f32 ? 4 : 2; }

void require(bool ok, const std::string& message) {
  if (!ok) throw InputError(message);
}

}  // namespace

std::size_t device_cache_layer_bytes(const ModelConfig& c, const DeviceCacheSpec& spec) {
  const std::size_t bs = spec.paged ? static_cast<std::size_t>(spec.block_size) : static_cast<std::size_t>(spec.max_ctx);
  const std::size_t blocks_per_seq = (static_cast<std::size_t>(spec.max_ctx) + bs - 1) / bs;
  return static_cast<std::size_t>(spec.batch) * blocks_per_seq * bs * static_cast<std::size_t>(c.kv_width()) *
         storage_bytes(spec.storage);
}

std::string device_gap(const ModelConfig& c) {
  if (c.sliding_window != 0) return "sliding-window models do not run on the device";
  if (c.cla_share != 1) return "cross-layer attention (CLA) does not run on the device";
  if (!c.causal) return "only causal models run on the device (a bidirectional model has no KV cache)";
  if (const std::string p = kernels::attention_shape_problem(c.n_head, c.n_kv_head, c.head_dim); !p.empty())
    return "the decode-attention kernel's limit: " + p;
  return "";
}

DeviceGpt::DeviceGpt(const MiniGPT<float>& model, kernels::ModelOps& ops, const DeviceCacheSpec& spec)
    : c_(model.config()), source_(model.source()), ops_(ops), spec_(spec) {
  if (const std::string gap = device_gap(c_); !gap.empty()) throw InputError("--device cuda: " + gap + "; use --device cpu");
  require(spec.batch >= 1 && spec.batch <= kMaxSize, fmt::format("device cache: batch must be in [1, {}]", kMaxSize));
  require(spec.max_ctx >= 1 && spec.max_ctx <= kMaxSize, fmt::format("device cache: max_ctx must be in [1, {}]", kMaxSize));
  require(!spec.paged || (spec.block_size >= 1 && spec.block_size <= kMaxSize),
          fmt::format("device cache: block_size must be in [1, {}]", kMaxSize));
  require(c_.positional == Positional::rope || spec.max_ctx <= c_.block_size,
          fmt::format("device cache: max_ctx {} exceeds block_size = {} of the learned position table", spec.max_ctx,
                      c_.block_size));
  q_w_ = c_.n_head * c_.head_dim;
  kv_w_ = c_.kv_width();
  rows_cap_ = std::max(spec.batch, spec.max_ctx);

  // Block tables. Contiguous: one block of max_ctx slots per sequence, table[s] = s. Paged: the
  // pool's blocks in a seeded random order, so that logical and physical blocks differ.
  block_size_ = spec.paged ? spec.block_size : spec.max_ctx;
  blocks_per_seq_ = (spec.max_ctx + block_size_ - 1) / block_size_;
  const long long blocks = static_cast<long long>(spec.batch) * blocks_per_seq_;
  require(blocks <= std::numeric_limits<int>::max(),
          fmt::format("device cache: batch {} x {} blocks per sequence is more blocks than one table holds",
                      spec.batch, blocks_per_seq_));
  num_blocks_ = static_cast<int>(blocks);
  table_.resize(static_cast<std::size_t>(num_blocks_));
  std::iota(table_.begin(), table_.end(), 0);
  if (spec.paged) {
    Rng rng(spec.seed);
    for (std::size_t i = table_.size(); i > 1; --i)  // Fisher-Yates
      std::swap(table_[i - 1], table_[static_cast<std::size_t>(rng.uniform() * static_cast<double>(i))]);
  }
  lengths_.assign(static_cast<std::size_t>(spec.batch), 0);

  try {
    const auto& w = model.weights();
    const int d = c_.d_model;
    wte_ = upload(w.wte.data(), static_cast<std::size_t>(w.wte.size()));
    if (c_.positional == Positional::learned) wpe_ = upload(w.wpe.data(), static_cast<std::size_t>(w.wpe.size()));
    lnf_g_ = upload(w.lnf_gain.data(), d);
    lnf_b_ = upload(w.lnf_bias.data(), d);
    w_lm_ = upload(w.w_lm.data(), static_cast<std::size_t>(w.w_lm.size()));
    const std::size_t cache_bytes = device_cache_layer_bytes(c_, spec);
    for (const auto& b : w.blocks) {
      const auto up = [this](const auto& m) { return upload(m.data(), static_cast<std::size_t>(m.size())); };
      Layer L{up(b.ln1_gain), up(b.ln1_bias), up(b.w_q),      up(b.b_q),  up(b.w_k),  up(b.b_k),
              up(b.w_v),      up(b.b_v),      up(b.w_o),      up(b.b_o),  up(b.ln2_gain), up(b.ln2_bias),
              up(b.w_fc),     up(b.b_fc),     up(b.w_proj),   up(b.b_proj), alloc(cache_bytes), alloc(cache_bytes)};
      ops_.poison(L.k_cache.p, cache_bytes);
      ops_.poison(L.v_cache.p, cache_bytes);
      layers_.push_back(L);
    }
    const auto act = [this](int cols) { return alloc(static_cast<std::size_t>(rows_cap_) * cols * sizeof(float)); };
    x_ = act(d), h_ = act(d), q_ = act(q_w_), k_ = act(kv_w_), v_ = act(kv_w_), att_ = act(q_w_), tmp_ = act(d);
    m_ = act(4 * d), logits_ = act(c_.vocab_size);
  } catch (...) {
    for (const Buffer& b : owned_) ops_.release(b.p);
    throw;
  }
}

DeviceGpt::~DeviceGpt() {
  for (const Buffer& b : owned_) ops_.release(b.p);
}

DeviceGpt::Buffer DeviceGpt::alloc(std::size_t bytes) {
  Buffer b{ops_.alloc(bytes)};
  owned_.push_back(b);
  return b;
}

DeviceGpt::Buffer DeviceGpt::upload(const float* host, std::size_t n) {
  Buffer b = alloc(n * sizeof(float));
  ops_.upload(b.p, host, n * sizeof(float));
  return b;
}

void DeviceGpt::check_seq(int seq, const char* what) const {
  require(seq >= 0 && seq < spec_.batch, fmt::format("{}: sequence {} outside [0, {})", what, seq, spec_.batch));
}

int DeviceGpt::length(int seq) const {
  check_seq(seq, "length");
  return lengths_[static_cast<std::size_t>(seq)];
}

void DeviceGpt::truncate(int seq, int len) {
  check_seq(seq, "truncate");
  int& n = lengths_[static_cast<std::size_t>(seq)];
  require(len >= 0 && len <= n, fmt::format("truncate: length {} outside [0, {}]", len, n));
  // The dropped positions become NaN again, so that a kernel that read past the length after a
  // rollback would show in the logits rather than reuse a rejected draft's K/V.
  const std::size_t row_bytes = static_cast<std::size_t>(kv_w_) * storage_bytes(spec_.storage);
  for (int p = len; p < n; ++p) {
    const std::size_t offset = slot_of(seq, p) * row_bytes;
    for (const Layer& L : layers_) {
      ops_.poison(static_cast<unsigned char*>(L.k_cache.p) + offset, row_bytes);
      ops_.poison(static_cast<unsigned char*>(L.v_cache.p) + offset, row_bytes);
    }
  }
  n = len;
}

std::size_t DeviceGpt::slot_of(int seq, int pos) const {
  const int block = table_[static_cast<std::size_t>(seq) * blocks_per_seq_ + pos / block_size_];
  return static_cast<std::size_t>(block) * block_size_ + pos % block_size_;
}

kernels::CacheRows DeviceGpt::rows_for(const std::vector<int>& seqs, const std::vector<int>& pos) const {
  kernels::CacheRows r;
  r.paged = spec_.paged;
  r.block_size = block_size_;
  r.blocks_per_seq = blocks_per_seq_;
  r.num_blocks = num_blocks_;
  r.pos = pos;
  r.table.reserve(seqs.size() * static_cast<std::size_t>(blocks_per_seq_));
  for (const int s : seqs)
    for (int j = 0; j < blocks_per_seq_; ++j) r.table.push_back(table_[static_cast<std::size_t>(s) * blocks_per_seq_ + j]);
  return r;
}

Mat<float> DeviceGpt::forward(int seq, std::span<const int> tokens) {
  check_seq(seq, "forward");
  const int T = static_cast<int>(tokens.size()), start = lengths_[static_cast<std::size_t>(seq)];
  require(T >= 1, "forward: no tokens");
  require(start + T <= spec_.max_ctx, fmt::format("forward: positions {}..{} exceed the cache's max_ctx = {}", start,
                                                  start + T - 1, spec_.max_ctx));
  std::vector<int> pos(static_cast<std::size_t>(T));
  std::iota(pos.begin(), pos.end(), start);
  const Mat<float> logits =
      run(std::vector<int>(tokens.begin(), tokens.end()), rows_for(std::vector<int>(pos.size(), seq), pos));
  lengths_[static_cast<std::size_t>(seq)] += T;
  return logits;
}

Mat<float> DeviceGpt::decode(std::span<const int> tokens) {
  const int B = static_cast<int>(tokens.size());
  require(B >= 1 && B <= spec_.batch, fmt::format("decode: {} tokens, the cache holds [1, {}] sequences", B, spec_.batch));
  std::vector<int> seqs(static_cast<std::size_t>(B)), pos(static_cast<std::size_t>(B));
  for (int b = 0; b < B; ++b) {
    seqs[b] = b;
    pos[b] = lengths_[static_cast<std::size_t>(b)];
    require(pos[b] < spec_.max_ctx, fmt::format("decode: sequence {} is full (max_ctx = {})", b, spec_.max_ctx));
  }
  const Mat<float> logits = run(std::vector<int>(tokens.begin(), tokens.end()), rows_for(seqs, pos));
  for (int b = 0; b < B; ++b) ++lengths_[static_cast<std::size_t>(b)];
  return logits;
}

Mat<float> DeviceGpt::run(const std::vector<int>& tokens, const kernels::CacheRows& rows) {
  const int R = rows.rows(), d = c_.d_model, hd = c_.head_dim;
  for (const int t : tokens)
    require(t >= 0 && t < c_.vocab_size, fmt::format("token: id {} outside [0, {})", t, c_.vocab_size));
  const bool rope = c_.positional == Positional::rope;
  const std::size_t rd = static_cast<std::size_t>(R) * d;
  ops_.embed(tokens, rows.pos, wte_.f(), rope ? nullptr : wpe_.f(), x_.f(), d);
  for (const Layer& L : layers_) {
    ops_.layer_norm(x_.f(), L.ln1_g.f(), L.ln1_b.f(), h_.f(), R, d);
    ops_.linear(h_.f(), L.w_q.f(), L.b_q.f(), q_.f(), R, d, q_w_);
    ops_.linear(h_.f(), L.w_k.f(), L.b_k.f(), k_.f(), R, d, kv_w_);
    ops_.linear(h_.f(), L.w_v.f(), L.b_v.f(), v_.f(), R, d, kv_w_);
    if (rope) {  // rotated at the token's own position before K is cached (004 §1.6)
      ops_.rope(q_.f(), rows.pos, c_.n_head, hd, c_.rope_theta);
      ops_.rope(k_.f(), rows.pos, c_.n_kv_head, hd, c_.rope_theta);
    }
    ops_.kv_append(k_.f(), v_.f(), L.k_cache.p, L.v_cache.p, rows, kv_w_, spec_.storage);
    ops_.attention(q_.f(), L.k_cache.p, L.v_cache.p, rows, att_.f(), c_.n_head, c_.n_kv_head, hd, spec_.storage);
    ops_.linear(att_.f(), L.w_o.f(), L.b_o.f(), tmp_.f(), R, q_w_, d);
    ops_.add(x_.f(), tmp_.f(), rd);
    ops_.layer_norm(x_.f(), L.ln2_g.f(), L.ln2_b.f(), h_.f(), R, d);
    ops_.linear(h_.f(), L.w_fc.f(), L.b_fc.f(), m_.f(), R, d, 4 * d);
    ops_.gelu(m_.f(), rd * 4);
    ops_.linear(m_.f(), L.w_proj.f(), L.b_proj.f(), tmp_.f(), R, 4 * d, d);
    ops_.add(x_.f(), tmp_.f(), rd);
  }
  ops_.layer_norm(x_.f(), lnf_g_.f(), lnf_b_.f(), h_.f(), R, d);
  ops_.linear(h_.f(), w_lm_.f(), nullptr, logits_.f(), R, d, c_.vocab_size);
  Mat<float> logits(R, c_.vocab_size);
  ops_.download(logits.data(), logits_.p, static_cast<std::size_t>(logits.size()) * sizeof(float));
  // A NaN anywhere above reaches the logits; from a weights file it is the file's fault (exit 2).
  if (!source_.empty() && !logits.allFinite())
    throw InputError(fmt::format("{}: the forward on the device gives non-finite values (logits): the weights "
                                 "overflow float32; kvlab needs a forward that stays finite", source_));
  return logits;
}

Mat<float> DeviceGpt::cached(int layer, int seq, bool values) const {
  check_seq(seq, values ? "values" : "keys");
  require(layer >= 0 && layer < c_.n_layer, fmt::format("{}: layer {} outside [0, {})", values ? "values" : "keys",
                                                        layer, c_.n_layer));
  const Layer& L = layers_[static_cast<std::size_t>(layer)];
  const std::size_t es = storage_bytes(spec_.storage), row_bytes = static_cast<std::size_t>(kv_w_) * es;
  const int len = lengths_[static_cast<std::size_t>(seq)];
  std::vector<unsigned char> raw(static_cast<std::size_t>(len) * row_bytes);
  for (int p = 0; p < len; ++p)  // one row per position, through the block table
    ops_.download(raw.data() + p * row_bytes,
                  static_cast<const unsigned char*>(values ? L.v_cache.p : L.k_cache.p) + slot_of(seq, p) * row_bytes,
                  row_bytes);
  Mat<float> out(len, kv_w_);
  for (std::size_t i = 0; i < static_cast<std::size_t>(out.size()); ++i) {
    if (spec_.storage == kernels::Storage::f32) {
      std::memcpy(out.data() + i, raw.data() + 4 * i, 4);
    } else {  // bf16: the float's top 16 bits
      std::uint16_t half = 0;
      std::memcpy(&half, raw.data() + 2 * i, 2);
      const std::uint32_t bits = static_cast<std::uint32_t>(half) << 16;
      std::memcpy(out.data() + i, &bits, 4);
    }
  }
  return out;
}

Mat<float> DeviceGpt::keys(int layer, int seq) const { return cached(layer, seq, false); }
Mat<float> DeviceGpt::values(int layer, int seq) const { return cached(layer, seq, true); }

}  // namespace kvlab::gpu

#include "device/host_ops.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>

#include "attention/gqa.hpp"
#include "reference/kernels.hpp"
#include "core/tensor.hpp"
#include "model/ops.hpp"

namespace kvlab::gpu {
namespace {

using kernels::CacheRows;
using kernels::Storage;

std::size_t slot_of(const CacheRows& rows, int r, int p, bool identity_table) {
  const int j = p / rows.block_size;
  const int block = identity_table ? j : rows.table[static_cast<std::size_t>(r) * rows.blocks_per_seq + j];
  return static_cast<std::size_t>(block) * rows.block_size + p % rows.block_size;
}

float load(const void* cache, std::size_t i, Storage s) {
  if (s == Storage::f32) return static_cast<const float*>(cache)[i];
  const std::uint32_t bits = static_cast<std::uint32_t>(static_cast<const std::uint16_t*>(cache)[i]) << 16;
  return std::bit_cast<float>(bits);
}

void store(void* cache, std::size_t i, float x, Storage s) {
  if (s == Storage::f32) {
    static_cast<float*>(cache)[i] = x;
    return;
  }
  static_cast<std::uint16_t*>(cache)[i] = static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(round_to_bf16(x)) >> 16);
}

/// Host memory [rows, cols] as a row-major matrix view.
Eigen::Map<Mat<float>> rows_of(float* p, int rows, int cols) { return {p, rows, cols}; }
Eigen::Map<const Mat<float>> rows_of(const float* p, int rows, int cols) { return {p, rows, cols}; }

class HostOps final : public kernels::ModelOps {
 public:
  explicit HostOps(HostFaults faults) : faults_(faults) {}
  ~HostOps() override {
    for (void* p : live_) std::free(p);
  }
  std::string name() const override { return "host-f32"; }

  void* alloc(std::size_t bytes) override {
    void* p = std::malloc(std::max<std::size_t>(bytes, 1));
    if (!p) throw std::bad_alloc();
    live_.push_back(p);
    return p;
  }
  void release(void* p) noexcept override {
    if (!p) return;
    const auto it = std::find(live_.begin(), live_.end(), p);
    if (it != live_.end()) live_.erase(it);
    std::free(p);
  }
  void upload(void* dst, const void* src, std::size_t bytes) override { std::memcpy(dst, src, bytes); }
  void download(void* dst, const void* src, std::size_t bytes) override { std::memcpy(dst, src, bytes); }
  void poison(void* p, std::size_t bytes) override { std::memset(p, 0xFF, bytes); }
  void synchronize() override {}

  // The mini-GPT's own float32 pieces (model/ops.hpp, attention/gqa.hpp) on copies of the rows:
  // the same arithmetic, in the same order, as MiniGPT<float>.
  void linear(const float* x, const float* w, const float* bias, float* y, int rows, int k, int n) override {
    const Vec<float> b = bias ? Vec<float>(Eigen::Map<const Vec<float>>(bias, n)) : Vec<float>(Vec<float>::Zero(n));
    rows_of(y, rows, n) = kvlab::linear<float>(rows_of(x, rows, k), rows_of(w, k, n), b);
  }

  void embed(const std::vector<int>& tokens, const std::vector<int>& pos, const float* wte, const float* wpe, float* x,
             int d) override {
    for (std::size_t r = 0; r < tokens.size(); ++r)
      for (int i = 0; i < d; ++i)
        x[r * d + i] = wte[static_cast<std::size_t>(tokens[r]) * d + i] +
                       (wpe ? wpe[static_cast<std::size_t>(pos[r]) * d + i] : 0.f);
  }

  void add(float* x, const float* y, std::size_t n) override {
    for (std::size_t i = 0; i < n; ++i) x[i] += y[i];
  }

  void layer_norm(const float* x, const float* gain, const float* bias, float* y, int rows, int cols) override {
    rows_of(y, rows, cols) = kvlab::layer_norm<float>(rows_of(x, rows, cols), Eigen::Map<const Vec<float>>(gain, cols),
                                                      Eigen::Map<const Vec<float>>(bias, cols));
  }

  void gelu(float* x, std::size_t n) override {
    Mat<float> m = rows_of(x, 1, static_cast<int>(n));
    gelu_inplace(m);
    rows_of(x, 1, static_cast<int>(n)) = m;
  }

  void rope(float* x, const std::vector<int>& pos, int n_heads, int head_dim, double theta) override {
    const int w = n_heads * head_dim;
    for (std::size_t r = 0; r < pos.size(); ++r) {  // one row at a time: each at its own position
      Mat<float> row = rows_of(x + r * w, 1, w);
      apply_rope(row, n_heads, head_dim, pos[r], theta);
      rows_of(x + r * w, 1, w) = row;
    }
  }

  void kv_append(const float* k_new, const float* v_new, void* k_cache, void* v_cache, const CacheRows& rows, int kvw,
                 Storage storage) override {
    for (int r = 0; r < rows.rows(); ++r) {
      const int capacity = rows.blocks_per_seq * rows.block_size;  // the fault stays inside the sequence's slots
      const int p = faults_.append_wrong_slot ? (rows.pos[r] + 1) % capacity : rows.pos[r];
      std::vector<std::size_t> slots{slot_of(rows, r, p, false)};
      if (faults_.append_overwrites_past && p > 0) slots.push_back(slot_of(rows, r, p - 1, false));
      for (const std::size_t slot : slots)
        for (int e = 0; e < kvw; ++e) {
          store(k_cache, slot * kvw + e, k_new[static_cast<std::size_t>(r) * kvw + e], storage);
          store(v_cache, slot * kvw + e, v_new[static_cast<std::size_t>(r) * kvw + e], storage);
        }
    }
  }

  void attention(const float* q, const void* k_cache, const void* v_cache, const CacheRows& rows, float* out, int n_head,
                 int n_kv_head, int head_dim, Storage storage) override {
    const int group = n_head / n_kv_head;
    const std::size_t kvw = static_cast<std::size_t>(n_kv_head) * head_dim;
    const float scale = 1.f / std::sqrt(static_cast<float>(head_dim));
    std::vector<float> s;
    for (int r = 0; r < rows.rows(); ++r) {
      const int len = rows.pos[r] + 1 - (faults_.attention_drops_last ? 1 : 0);
      s.assign(static_cast<std::size_t>(std::max(len, 0)), 0.f);
      for (int h = 0; h < n_head; ++h) {
        const float* qh = q + (static_cast<std::size_t>(r) * n_head + h) * head_dim;
        const std::size_t off = static_cast<std::size_t>(h / group) * head_dim;
        float m = -std::numeric_limits<float>::infinity();
        for (int p = 0; p < len; ++p) {
          const std::size_t row = slot_of(rows, r, p, faults_.attention_no_gather) * kvw + off;
          float dot = 0.f;
          for (int d = 0; d < head_dim; ++d) dot += qh[d] * load(k_cache, row + d, storage);
          s[p] = dot * scale;
          m = std::max(m, s[p]);
        }
        float l = 0.f;
        for (int p = 0; p < len; ++p) l += (s[p] = std::exp(s[p] - m));
        float* o = out + (static_cast<std::size_t>(r) * n_head + h) * head_dim;
        for (int d = 0; d < head_dim; ++d) {
          float acc = 0.f;
          for (int p = 0; p < len; ++p)
            acc += s[p] * load(v_cache, slot_of(rows, r, p, faults_.attention_no_gather) * kvw + off + d, storage);
          o[d] = acc / l;
        }
      }
    }
  }

 private:
  HostFaults faults_;
  std::vector<void*> live_;  // freed with the ops object, as a device context frees its memory
};

}  // namespace

std::unique_ptr<kernels::ModelOps> make_host_ops(HostFaults faults) { return std::make_unique<HostOps>(faults); }

}  // namespace kvlab::gpu

// `--device cuda`: the mini-GPT's operations (kernels/model_ops.hpp) on the GPU
// (kernels/model_ops.cu, gpu::make_model_ops) against their float32 CPU twin
// (device/host_ops.hpp, gpu::make_host_ops), on the same seeded random inputs.
//
// For every operation and shape, three comparisons (reference/kernels.hpp's compare(): NaN/Inf
// and stray writes first, then max_i |got_i - want_i| / scale_i against a bound):
//   GPU  vs the float64 reference, bound B      (which side is wrong, when one is)
//   host vs the float64 reference, bound B
//   GPU  vs host,                  bound 2B     (|a - b| <= |a - ref| + |ref - b|)
// B per operation, first order in u = 2^-24 (docs/gpu.md "The parity bounds" has the kernels'):
//   linear      scale sum_j |x_j w_j| + |b|, B = gamma_(k+1): any summation order of a k-term dot
//               product (cuBLAS's included, FMA or not) is within gamma_k of it (Higham (3.5)),
//               and the bias add rounds once more
//   embed, add  scale |a| + |b|, B = u: one correctly rounded addition; GPU vs host must then be
//               bit-identical (bound 0), both rounding the same two float32 operands
//   kv_append   the cache bytes must be identical (a copy, or round-to-nearest-even bf16 of the
//               same float), every slot no row writes still holding the NaN poison
//   layer_norm, gelu, rope, attention   the kernels' parity bounds (ref_layer_norm, ref_gelu,
//               ref_rope, ref_decode_attention)
// The attention cache holds NaN in every slot no row may read, so a read past pos[r] shows.
//
// Without a device (or without CUDA) the GPU case is reported skipped, never passed; the
// comparison itself is shown to have teeth on the CPU (a host ops object with one fault per
// operation fails that operation and no other).
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "device/cuda_entry.hpp"
#include "device/device.hpp"
#include "device/host_ops.hpp"
#include "reference/kernels.hpp"
#include "core/error.hpp"
#include "kernels/model_ops.hpp"

namespace device_gpu_model_ops_test {

using namespace kvlab;
using namespace kvlab::gpu;
using kernels::CacheRows;
using kernels::ModelOps;
using kernels::Storage;

TEST_CASE("gpu model ops: make_model_ops says why it cannot run here") {
  std::string why;
  if (!cuda_compiled()) {
    CHECK_THROWS_AS(make_model_ops(), InputError);  // "built without CUDA", exit 2
  } else if (cuda_devices(&why).empty()) {
    CHECK_THROWS_AS(make_model_ops(), kernels::CudaError);  // names the failed CUDA call
  } else {
    const auto ops = make_model_ops();
    CHECK(ops->name().rfind("cuda: ", 0) == 0);
  }
}

namespace {

/// One ModelOps allocation, released with its owner.
class Buf {
 public:
  Buf(ModelOps& ops, std::size_t bytes) : ops_(ops), bytes_(bytes), p_(ops.alloc(bytes)) {}
  ~Buf() { ops_.release(p_); }
  Buf(const Buf&) = delete;
  Buf& operator=(const Buf&) = delete;
  template <class T = float>
  T* as() const { return static_cast<T*>(p_); }
  std::size_t bytes() const { return bytes_; }

 private:
  ModelOps& ops_;
  std::size_t bytes_;
  void* p_;
};

/// A device copy of a host vector, on `ops`.
template <class T>
std::unique_ptr<Buf> put(ModelOps& ops, const std::vector<T>& v) {
  std::unique_ptr<Buf> b = std::make_unique<Buf>(ops, v.size() * sizeof(T));
  ops.upload(b->as<void>(), v.data(), v.size() * sizeof(T));
  return b;
}

/// A NaN-poisoned allocation of n elements of T.
template <class T = float>
std::unique_ptr<Buf> poisoned(ModelOps& ops, std::size_t n) {
  std::unique_ptr<Buf> b = std::make_unique<Buf>(ops, n * sizeof(T));
  ops.poison(b->as<void>(), n * sizeof(T));
  return b;
}

std::vector<float> get(ModelOps& ops, const Buf& b, std::size_t n) {
  std::vector<float> v(n);
  ops.download(v.data(), b.as<void>(), n * sizeof(float));
  return v;
}

/// A cache buffer of n elements as float32 (bf16 widened exactly: its bits are a float's top half).
std::vector<float> get_cache(ModelOps& ops, const Buf& b, std::size_t n, Storage s) {
  if (s == Storage::f32) return get(ops, b, n);
  std::vector<std::uint16_t> h(n);
  ops.download(h.data(), b.as<void>(), n * 2);
  std::vector<float> f(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t bits = static_cast<std::uint32_t>(h[i]) << 16;
    std::memcpy(&f[i], &bits, 4);
  }
  return f;
}

/// Float values as the cache stores them: float32 bytes, or the top halves of bf16-rounded floats.
std::vector<std::uint8_t> cache_bytes(const std::vector<float>& v, Storage s) {
  std::vector<std::uint8_t> out(v.size() * (s == Storage::f32 ? 4 : 2));
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (s == Storage::f32) {
      std::memcpy(&out[i * 4], &v[i], 4);
    } else {
      std::uint32_t bits;
      const float r = round_to_bf16(v[i]);
      std::memcpy(&bits, &r, 4);
      const std::uint16_t top = static_cast<std::uint16_t>(bits >> 16);
      std::memcpy(&out[i * 2], &top, 2);
    }
  }
  return out;
}

float round_to_bf16_if(Storage s, float x) { return s == Storage::bf16 ? round_to_bf16(x) : x; }

std::vector<float> uniform(std::mt19937_64& rng, std::size_t n, float lo = -1.f, float hi = 1.f) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

/// One operation on one shape: the three comparisons of the header.
struct OpsRow {
  std::string op, shape;
  Comparison a_ref, b_ref, a_b;
  bool passed() const { return a_ref.passed && b_ref.passed && a_b.passed; }
};

OpsRow judge(std::string op, std::string shape, const std::vector<float>& a, const std::vector<float>& b,
             const Reference& ref, double pair_bound) {
  OpsRow row{std::move(op), std::move(shape), compare(a, ref), compare(b, ref), {}};
  Reference rb = ref;  // b as the reference of a: same scales, NaN where b kept the poison
  rb.value.assign(b.begin(), b.end());
  rb.bound = pair_bound;
  row.a_b = compare(a, rb);
  return row;
}

/// The reference of a KV append, as ref_kv_append sees it: a paged layout (the general form of
/// CacheRows; a contiguous cache is block_size = max_ctx, blocks_per_seq = 1).
kernels::CacheLayout layout_of(const CacheRows& rows, int n_kv_head, int head_dim, Storage s) {
  kernels::CacheLayout L;
  L.batch = rows.rows(), L.n_kv_head = n_kv_head, L.head_dim = head_dim, L.paged = true;
  L.block_size = rows.block_size, L.num_blocks = rows.num_blocks, L.blocks_per_seq = rows.blocks_per_seq;
  L.block_table = rows.table, L.storage = s;
  return L;
}

/// The cache geometries the tests use: `kind` "decode" (row r = sequence r of a contiguous cache:
/// the contiguous kernel), "prefill" (every row one sequence of a contiguous cache, positions
/// 0..rows-1: the paged kernel with blocks_per_seq 1), "paged" (blocks of 4, shuffled pool).
CacheRows make_rows(const std::string& kind, int rows, std::mt19937_64& rng) {
  CacheRows c;
  const int max_ctx = 40;
  if (kind == "decode") {
    c.block_size = max_ctx, c.blocks_per_seq = 1, c.num_blocks = rows;
    c.table.resize(rows);
    std::iota(c.table.begin(), c.table.end(), 0);
    std::uniform_int_distribution<int> p(0, max_ctx - 1);
    for (int r = 0; r < rows; ++r) c.pos.push_back(p(rng));
  } else if (kind == "prefill") {
    c.block_size = max_ctx, c.blocks_per_seq = 1, c.num_blocks = 2;
    c.table.assign(rows, 1);  // sequence 1 of 2
    for (int r = 0; r < rows; ++r) c.pos.push_back(r);
  } else {
    c.paged = true, c.block_size = 4, c.blocks_per_seq = max_ctx / 4;
    c.num_blocks = rows * c.blocks_per_seq + 3;  // three blocks nobody owns
    std::vector<int> pool(c.num_blocks);
    std::iota(pool.begin(), pool.end(), 0);
    std::shuffle(pool.begin(), pool.end(), rng);
    c.table.assign(pool.begin(), pool.begin() + static_cast<std::ptrdiff_t>(rows) * c.blocks_per_seq);
    std::uniform_int_distribution<int> p(0, max_ctx - 1);
    for (int r = 0; r < rows; ++r) c.pos.push_back(p(rng));
  }
  return c;
}

std::size_t slot(const CacheRows& c, int r, int p) {
  return static_cast<std::size_t>(c.table[static_cast<std::size_t>(r) * c.blocks_per_seq + p / c.block_size]) *
             c.block_size + p % c.block_size;
}

/// Every operation of the ModelOps interface, on ops `a` and `b`, on the same inputs (seed).
std::vector<OpsRow> compare_model_ops(ModelOps& a, ModelOps& b, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<OpsRow> out;
  const double u = kUnitF32;

  // linear: odd sizes, one row, with and without bias.
  const std::array<int, 3> linear_shapes[] = {{1, 64, 48}, {5, 67, 33}, {17, 256, 96}};
  for (auto [rows, k, n] : linear_shapes)
    for (bool with_bias : {true, false}) {
      const auto x = uniform(rng, static_cast<std::size_t>(rows) * k);
      const auto w = uniform(rng, static_cast<std::size_t>(k) * n);
      const auto bias = uniform(rng, n);
      Reference ref;
      ref.bound = gamma_f32(k + 1);
      for (int r = 0; r < rows; ++r)
        for (int j = 0; j < n; ++j) {
          double s = 0, m = 0;
          for (int t = 0; t < k; ++t) {
            const double p = static_cast<double>(x[r * k + t]) * w[static_cast<std::size_t>(t) * n + j];
            s += p, m += std::abs(p);
          }
          if (with_bias) s += bias[j], m += std::abs(bias[j]);
          ref.value.push_back(s), ref.scale.push_back(m);
        }
      std::vector<float> got[2];
      ModelOps* ops[2] = {&a, &b};
      for (int i = 0; i < 2; ++i) {
        auto dx = put(*ops[i], x), dw = put(*ops[i], w), db = put(*ops[i], bias);
        auto dy = poisoned(*ops[i], ref.value.size());
        ops[i]->linear(dx->as(), dw->as(), with_bias ? db->as() : nullptr, dy->as(), rows, k, n);
        got[i] = get(*ops[i], *dy, ref.value.size());
      }
      out.push_back(judge("linear", std::to_string(rows) + "x" + std::to_string(k) + "x" + std::to_string(n) +
                                        (with_bias ? "+b" : ""),
                          got[0], got[1], ref, 2 * ref.bound));
    }

  // embed: with wpe (learned positions) and without (RoPE models).
  for (bool with_wpe : {true, false}) {
    const int vocab = 11, n_ctx = 9, d = 24, rows = 7;
    const auto wte = uniform(rng, vocab * d), wpe = uniform(rng, n_ctx * d);
    std::vector<int> tokens, pos;
    for (int r = 0; r < rows; ++r) {
      tokens.push_back(static_cast<int>(rng() % vocab));
      pos.push_back(static_cast<int>(rng() % n_ctx));
    }
    Reference ref;
    ref.bound = u;
    for (int r = 0; r < rows; ++r)
      for (int e = 0; e < d; ++e) {
        const double t = wte[tokens[r] * d + e], p = with_wpe ? wpe[pos[r] * d + e] : 0.0;
        ref.value.push_back(t + p), ref.scale.push_back(std::abs(t) + std::abs(p));
      }
    std::vector<float> got[2];
    ModelOps* ops[2] = {&a, &b};
    for (int i = 0; i < 2; ++i) {
      auto dte = put(*ops[i], wte), dpe = put(*ops[i], wpe);
      auto dx = poisoned(*ops[i], ref.value.size());
      ops[i]->embed(tokens, pos, dte->as(), with_wpe ? dpe->as() : nullptr, dx->as(), d);
      got[i] = get(*ops[i], *dx, ref.value.size());
    }
    out.push_back(judge("embed", with_wpe ? "7x24+wpe" : "7x24", got[0], got[1], ref, 0.0));
  }

  // add: an odd length.
  {
    const std::size_t n = 1001;
    const auto x = uniform(rng, n), y = uniform(rng, n);
    Reference ref;
    ref.bound = u;
    for (std::size_t i = 0; i < n; ++i)
      ref.value.push_back(static_cast<double>(x[i]) + y[i]), ref.scale.push_back(std::abs(x[i]) + std::abs(y[i]));
    std::vector<float> got[2];
    ModelOps* ops[2] = {&a, &b};
    for (int i = 0; i < 2; ++i) {
      auto dx = put(*ops[i], x), dy = put(*ops[i], y);
      ops[i]->add(dx->as(), dy->as(), n);
      got[i] = get(*ops[i], *dx, n);
    }
    out.push_back(judge("add", "1001", got[0], got[1], ref, 0.0));
  }

  // layer_norm: rows of odd width, an offset mean.
  const std::array<int, 2> ln_shapes[] = {{1, 64}, {3, 77}, {4, 300}};
  for (auto [rows, cols] : ln_shapes) {
    kernels::RowsInput in;
    in.rows = rows, in.cols = cols;
    in.x = uniform(rng, static_cast<std::size_t>(rows) * cols, 0.5f, 3.f);
    in.gain = uniform(rng, cols, 0.5f, 1.5f), in.bias = uniform(rng, cols);
    const Reference ref = ref_layer_norm(in);
    std::vector<float> got[2];
    ModelOps* ops[2] = {&a, &b};
    for (int i = 0; i < 2; ++i) {
      auto dx = put(*ops[i], in.x), dg = put(*ops[i], in.gain), db = put(*ops[i], in.bias);
      auto dy = poisoned(*ops[i], in.x.size());
      ops[i]->layer_norm(dx->as(), dg->as(), db->as(), dy->as(), rows, cols);
      got[i] = get(*ops[i], *dy, in.x.size());
    }
    out.push_back(judge("layer_norm", std::to_string(rows) + "x" + std::to_string(cols), got[0], got[1], ref,
                        2 * ref.bound));
  }

  // gelu, in place.
  {
    kernels::RowsInput in;
    in.rows = 1, in.cols = 999, in.x = uniform(rng, 999, -5.f, 5.f);
    const Reference ref = ref_gelu(in);
    std::vector<float> got[2];
    ModelOps* ops[2] = {&a, &b};
    for (int i = 0; i < 2; ++i) {
      auto dx = put(*ops[i], in.x);
      ops[i]->gelu(dx->as(), in.x.size());
      got[i] = get(*ops[i], *dx, in.x.size());
    }
    out.push_back(judge("gelu", "999", got[0], got[1], ref, 2 * ref.bound));
  }

  // rope, in place: a far position (8191) where a float32 angle would be off.
  const std::array<int, 2> rope_shapes[] = {{4, 16}, {3, 64}};
  for (auto [n_heads, head_dim] : rope_shapes) {
    kernels::RopeInput in;
    in.batch = 3, in.n_heads = n_heads, in.head_dim = head_dim, in.theta = 10000.0, in.pos = {0, 7, 8191};
    in.x = uniform(rng, static_cast<std::size_t>(in.batch) * n_heads * head_dim);
    const Reference ref = ref_rope(in);
    std::vector<float> got[2];
    ModelOps* ops[2] = {&a, &b};
    for (int i = 0; i < 2; ++i) {
      auto dx = put(*ops[i], in.x);
      ops[i]->rope(dx->as(), in.pos, n_heads, head_dim, in.theta);
      got[i] = get(*ops[i], *dx, in.x.size());
    }
    out.push_back(judge("rope", "3x" + std::to_string(n_heads) + "x" + std::to_string(head_dim), got[0], got[1],
                        ref, 2 * ref.bound));
  }

  // kv_append and attention over the three cache geometries, f32 and bf16, GQA 1, 4 and MQA.
  struct Heads {
    int n_head, n_kv_head, head_dim;
  };
  for (const std::string kind : {"decode", "prefill", "paged"})
    for (Storage s : {Storage::f32, Storage::bf16})
      for (Heads h : {Heads{4, 4, 16}, Heads{8, 2, 32}, Heads{6, 1, 24}}) {  // GQA 1, 4, MQA
        const int rows = kind == "prefill" ? 6 : 3;
        const CacheRows c = make_rows(kind, rows, rng);
        const int kvw = h.n_kv_head * h.head_dim;
        const std::size_t slots = static_cast<std::size_t>(c.num_blocks) * c.block_size;
        const std::string shape = kind + " " + std::to_string(h.n_head) + "/" + std::to_string(h.n_kv_head) + "x" +
                                  std::to_string(h.head_dim) + " " + kernels::storage_name(s);

        // append into a poisoned cache
        kernels::KvAppendInput ap;
        ap.layout = layout_of(c, h.n_kv_head, h.head_dim, s);
        ap.k_new = uniform(rng, static_cast<std::size_t>(rows) * kvw), ap.v_new = uniform(rng, ap.k_new.size());
        ap.pos = c.pos;
        const Reference aref = ref_kv_append(ap);
        std::vector<float> got[2];
        ModelOps* ops[2] = {&a, &b};
        for (int i = 0; i < 2; ++i) {
          auto dk = put(*ops[i], ap.k_new), dv = put(*ops[i], ap.v_new);
          const std::size_t esz = s == Storage::f32 ? 4 : 2;
          auto kc = std::make_unique<Buf>(*ops[i], slots * kvw * esz);
          auto vc = std::make_unique<Buf>(*ops[i], slots * kvw * esz);
          ops[i]->poison(kc->as<void>(), kc->bytes()), ops[i]->poison(vc->as<void>(), vc->bytes());
          ops[i]->kv_append(dk->as(), dv->as(), kc->as<void>(), vc->as<void>(), c, kvw, s);
          got[i] = get_cache(*ops[i], *kc, slots * kvw, s);
          const auto gv = get_cache(*ops[i], *vc, slots * kvw, s);
          got[i].insert(got[i].end(), gv.begin(), gv.end());
        }
        out.push_back(judge("kv_append", shape, got[0], got[1], aref, 0.0));

        // attention over a cache whose unreadable slots are NaN
        kernels::DecodeAttentionInput at;
        at.layout = layout_of(c, h.n_kv_head, h.head_dim, s);
        at.n_head = h.n_head;
        at.q = uniform(rng, static_cast<std::size_t>(rows) * h.n_head * h.head_dim, -2.f, 2.f);
        at.k_cache.assign(slots * kvw, std::nanf("")), at.v_cache.assign(slots * kvw, std::nanf(""));
        for (int r = 0; r < rows; ++r) {
          at.lengths.push_back(c.pos[r] + 1);
          for (int p = 0; p <= c.pos[r]; ++p)
            for (int e = 0; e < kvw; ++e) {
              const std::size_t i = slot(c, r, p) * kvw + e;
              if (std::isnan(at.k_cache[i])) at.k_cache[i] = round_to_bf16_if(s, uniform(rng, 1)[0]);
              if (std::isnan(at.v_cache[i])) at.v_cache[i] = round_to_bf16_if(s, uniform(rng, 1)[0]);
            }
        }
        const Reference tref = ref_decode_attention(at);
        const auto kb = cache_bytes(at.k_cache, s), vb = cache_bytes(at.v_cache, s);
        for (int i = 0; i < 2; ++i) {
          auto dq = put(*ops[i], at.q), kc = put(*ops[i], kb), vc = put(*ops[i], vb);
          auto dout = poisoned(*ops[i], at.q.size());
          ops[i]->attention(dq->as(), kc->as<void>(), vc->as<void>(), c, dout->as(), h.n_head, h.n_kv_head,
                            h.head_dim, s);
          got[i] = get(*ops[i], *dout, at.q.size());
        }
        out.push_back(judge("attention", shape, got[0], got[1], tref, 2 * tref.bound));
      }
  return out;
}

/// The rows of `op` (all: "") that failed; `print`: each with its comparisons' errors and bounds.
int failed(const std::vector<OpsRow>& rows, const std::string& op = "", bool print = true) {
  int n = 0;
  for (const auto& r : rows)
    if ((op.empty() || r.op == op) && !r.passed()) {
      ++n;
      if (print)
        MESSAGE(r.op << " " << r.shape << ": a-ref " << r.a_ref.error << "/" << r.a_ref.bound << " (nan "
                   << r.a_ref.non_finite << ", stray " << r.a_ref.poison_lost << "), b-ref " << r.b_ref.error
                   << "/" << r.b_ref.bound << ", a-b " << r.a_b.error << "/" << r.a_b.bound << " (nan "
                   << r.a_b.non_finite << ", stray " << r.a_b.poison_lost << ")");
    }
  return n;
}

/// Host ops with one deliberate fault: the comparison above must catch each.
class FaultyOps final : public ModelOps {
 public:
  enum class Fault { none, linear_no_bias, embed_no_wpe, add_scaled, layer_norm_off, gelu_tanh_off, rope_pos_off,
                     append_next_slot, attention_short };
  explicit FaultyOps(Fault f) : inner_(make_host_ops()), f_(f) {}
  std::string name() const override { return "faulty " + inner_->name(); }
  void* alloc(std::size_t bytes) override { return inner_->alloc(bytes); }
  void release(void* p) noexcept override { inner_->release(p); }
  void upload(void* d, const void* s, std::size_t n) override { inner_->upload(d, s, n); }
  void download(void* d, const void* s, std::size_t n) override { inner_->download(d, s, n); }
  void poison(void* p, std::size_t n) override { inner_->poison(p, n); }
  void synchronize() override { inner_->synchronize(); }
  void linear(const float* x, const float* w, const float* bias, float* y, int rows, int k, int n) override {
    inner_->linear(x, w, f_ == Fault::linear_no_bias ? nullptr : bias, y, rows, k, n);
  }
  void embed(const std::vector<int>& t, const std::vector<int>& p, const float* wte, const float* wpe, float* x,
             int d) override {
    inner_->embed(t, p, wte, f_ == Fault::embed_no_wpe ? nullptr : wpe, x, d);
  }
  void add(float* x, const float* y, std::size_t n) override {
    inner_->add(x, y, n);
    if (f_ == Fault::add_scaled) nudge(x, n, 1e-6f);  // >= 8 ulp: not a correctly rounded add
  }
  void layer_norm(const float* x, const float* g, const float* b, float* y, int rows, int cols) override {
    inner_->layer_norm(x, g, b, y, rows, cols);
    if (f_ == Fault::layer_norm_off) nudge(y, static_cast<std::size_t>(rows) * cols, 1e-3f);
  }
  void gelu(float* x, std::size_t n) override {
    inner_->gelu(x, n);
    if (f_ == Fault::gelu_tanh_off) nudge(x, n, 1e-4f);  // the tanh approximation's size of error
  }
  void rope(float* x, const std::vector<int>& pos, int nh, int hd, double theta) override {
    std::vector<int> p = pos;
    if (f_ == Fault::rope_pos_off) p.back() += 1;
    inner_->rope(x, p, nh, hd, theta);
  }
  void kv_append(const float* k, const float* v, void* kc, void* vc, const CacheRows& rows, int kvw,
                 Storage s) override {
    CacheRows r = rows;
    if (f_ == Fault::append_next_slot)
      for (auto& p : r.pos) p = std::min(p + 1, r.block_size * r.blocks_per_seq - 1);
    inner_->kv_append(k, v, kc, vc, r, kvw, s);
  }
  void attention(const float* q, const void* kc, const void* vc, const CacheRows& rows, float* out, int nh, int nkv,
                 int hd, Storage s) override {
    CacheRows r = rows;
    if (f_ == Fault::attention_short)
      for (auto& p : r.pos) p = std::max(p - 1, 0);
    inner_->attention(q, kc, vc, r, out, nh, nkv, hd, s);
  }

 private:
  /// The last element of x [n] moved by rel * max(|x|, 1).
  void nudge(float* x, std::size_t n, float rel) {
    float v;
    inner_->download(&v, x + n - 1, 4);
    v += rel * std::max(std::abs(v), 1.f);
    inner_->upload(x + n - 1, &v, 4);
  }
  std::unique_ptr<ModelOps> inner_;
  Fault f_;
};

/// Whether the GPU case can run; when not, says why on stderr (doctest then counts it skipped).
bool no_gpu_ops() {
  std::string why;
  if (cuda_compiled() && !cuda_devices(&why).empty()) return false;
  std::fprintf(stderr, "[test_gpu_model_ops] skipped: %s\n",
               cuda_compiled() ? ("no CUDA device (" + why + ")").c_str() : "built without CUDA");
  return true;
}

}  // namespace

TEST_CASE("gpu model ops: the comparison passes the host ops against themselves") {
  auto a = make_host_ops(), b = make_host_ops();
  const auto rows = compare_model_ops(*a, *b, 20261129);
  CHECK(rows.size() == 6 + 2 + 1 + 3 + 1 + 2 + 2 * 18);
  CHECK(failed(rows) == 0);
}

TEST_CASE("gpu model ops: each deliberate fault of the host ops fails its operation") {
  using F = FaultyOps::Fault;
  const std::pair<F, const char*> faults[] = {
      {F::linear_no_bias, "linear"},     {F::embed_no_wpe, "embed"},      {F::add_scaled, "add"},
      {F::layer_norm_off, "layer_norm"}, {F::gelu_tanh_off, "gelu"},      {F::rope_pos_off, "rope"},
      {F::append_next_slot, "kv_append"}, {F::attention_short, "attention"}};
  for (const auto& [fault, op_name] : faults) {
    const std::string op = op_name;
    CAPTURE(op);
    FaultyOps bad(fault);
    auto good = make_host_ops();
    const auto rows = compare_model_ops(bad, *good, 20261129);
    CHECK(failed(rows, op, false) > 0);
    int others = 0;
    for (const auto& r : rows) others += r.op != op && !r.passed();
    CHECK(others == 0);  // the fault shows where it is, and nowhere else
  }
}

TEST_CASE("gpu model ops: CUDA and host ops agree on every operation" * doctest::skip(no_gpu_ops())) {
  auto gpu_ops = make_model_ops();
  auto host = make_host_ops();
  MESSAGE("device: " << gpu_ops->name() << ", host: " << host->name());
  for (std::uint64_t seed : {1234u, 99u}) {
    CAPTURE(seed);
    CHECK(failed(compare_model_ops(*gpu_ops, *host, seed)) == 0);
  }
}

}  // namespace device_gpu_model_ops_test

#include "quant/quant_cache.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "core/error.hpp"
#include "quant/minifloat.hpp"

namespace kvlab {

namespace {

constexpr std::uint16_t kFp16One = 0x3C00;  // 1.0 in fp16: the scale a faulty write path stores

bool is_int(KvQuantFormat f) {
  return f == KvQuantFormat::int8 || f == KvQuantFormat::int4 || f == KvQuantFormat::int2;
}

MiniFloat fp8_of(KvQuantFormat f) {
  return f == KvQuantFormat::fp8_e5m2 ? MiniFloat::fp8_e5m2 : MiniFloat::fp8_e4m3;
}

}  // namespace

const char* kv_quant_format_name(KvQuantFormat f) {
  switch (f) {
    case KvQuantFormat::fp16: return "fp16";
    case KvQuantFormat::int8: return "int8";
    case KvQuantFormat::int4: return "int4";
    case KvQuantFormat::int2: return "int2";
    case KvQuantFormat::fp8_e4m3: return "fp8-e4m3";
    case KvQuantFormat::fp8_e5m2: return "fp8-e5m2";
  }
  return "?";
}

std::vector<KvQuantFormat> all_kv_quant_formats() {
  return {KvQuantFormat::fp16, KvQuantFormat::int8, KvQuantFormat::int4,
          KvQuantFormat::int2, KvQuantFormat::fp8_e4m3, KvQuantFormat::fp8_e5m2};
}

int kv_quant_code_bits(KvQuantFormat f) {
  switch (f) {
    case KvQuantFormat::fp16: return 16;
    case KvQuantFormat::int4: return 4;
    case KvQuantFormat::int2: return 2;
    default: return 8;
  }
}

int kv_quant_params_per_group(KvQuantFormat f) {
  if (f == KvQuantFormat::fp16) return 0;
  return is_int(f) ? 2 : 1;
}

// ---- PackedCodes ----------------------------------------------------------------------------

PackedCodes::PackedCodes(int bits) : bits_(bits) {
  if (bits != 2 && bits != 4 && bits != 8 && bits != 16)
    throw std::invalid_argument(fmt::format("PackedCodes: bits must be 2, 4, 8 or 16 (got {})", bits));
}

void PackedCodes::resize(std::uint64_t n) {
  n_ = n;
  data_.resize((n * static_cast<std::uint64_t>(bits_) + 7) / 8, 0);
}

void PackedCodes::set(std::uint64_t i, std::uint32_t code) {
  if (bits_ == 16) {
    data_[2 * i] = static_cast<std::uint8_t>(code & 0xFFu);
    data_[2 * i + 1] = static_cast<std::uint8_t>((code >> 8) & 0xFFu);
    return;
  }
  const std::uint64_t bit = i * static_cast<std::uint64_t>(bits_);
  const unsigned shift = static_cast<unsigned>(bit % 8);
  const unsigned mask = ((1u << bits_) - 1u) << shift;
  std::uint8_t& byte = data_[bit / 8];
  byte = static_cast<std::uint8_t>((byte & ~mask) | ((code << shift) & mask));
}

std::uint32_t PackedCodes::get(std::uint64_t i) const {
  if (bits_ == 16) return data_[2 * i] | (static_cast<std::uint32_t>(data_[2 * i + 1]) << 8);
  const std::uint64_t bit = i * static_cast<std::uint64_t>(bits_);
  return (static_cast<std::uint32_t>(data_[bit / 8]) >> (bit % 8)) & ((1u << bits_) - 1u);
}

// ---- one group ------------------------------------------------------------------------------

void quantize_group(const double* x, int n, int stride, KvQuantFormat f, PackedCodes& codes, std::uint64_t first,
                    std::uint64_t code_stride, std::uint16_t* params) {
  const double fp16_max = minifloat_spec(MiniFloat::fp16).max_finite;
  double lo = x[0], hi = x[0], amax = 0;
  for (int i = 0; i < n; ++i) {
    const double v = x[static_cast<std::ptrdiff_t>(i) * stride];
    if (!std::isfinite(v) || std::fabs(v) > fp16_max)
      throw std::domain_error(fmt::format("quantize_group: value {} is not a finite fp16 number", v));
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    amax = std::max(amax, std::fabs(v));
  }
  auto code_at = [&](int i) { return first + static_cast<std::uint64_t>(i) * code_stride; };
  if (f == KvQuantFormat::fp16) {
    for (int i = 0; i < n; ++i) codes.set(code_at(i), minifloat_encode(x[static_cast<std::ptrdiff_t>(i) * stride], MiniFloat::fp16));
    return;
  }
  if (is_int(f)) {
    const double levels = std::ldexp(1.0, kv_quant_code_bits(f)) - 1.0;  // 2^b - 1
    params[1] = minifloat_encode_down(lo, MiniFloat::fp16);  // zero <= min: every x - zero >= 0
    const double zero = minifloat_decode(params[1], MiniFloat::fp16);
    params[0] = minifloat_encode_up((hi - zero) / levels, MiniFloat::fp16);  // scale: max maps to <= 2^b - 1
    const double scale = minifloat_decode(params[0], MiniFloat::fp16);
    for (int i = 0; i < n; ++i) {
      const double y = scale > 0 ? (x[static_cast<std::ptrdiff_t>(i) * stride] - zero) / scale : 0.0;
      codes.set(code_at(i), static_cast<std::uint32_t>(std::clamp(round_half_even(y), 0.0, levels)));
    }
    return;
  }
  const MiniFloat m = fp8_of(f);  // fp8: symmetric absmax, max |x| maps to <= max_finite
  params[0] = minifloat_encode_up(amax / minifloat_spec(m).max_finite, MiniFloat::fp16);
  const double scale = minifloat_decode(params[0], MiniFloat::fp16);
  for (int i = 0; i < n; ++i)
    codes.set(code_at(i), scale > 0 ? minifloat_encode(x[static_cast<std::ptrdiff_t>(i) * stride] / scale, m) : 0u);
}

GroupParams decode_params(KvQuantFormat f, const std::uint16_t* params) {
  GroupParams p;
  if (f == KvQuantFormat::fp16) return p;
  p.scale = minifloat_decode(params[0], MiniFloat::fp16);
  if (is_int(f)) p.zero = minifloat_decode(params[1], MiniFloat::fp16);
  return p;
}

double dequantize_code(std::uint32_t code, KvQuantFormat f, const GroupParams& p) {
  const auto c16 = static_cast<std::uint16_t>(code);
  if (f == KvQuantFormat::fp16) return minifloat_decode(c16, MiniFloat::fp16);
  if (is_int(f)) return p.zero + static_cast<double>(code) * p.scale;
  return p.scale * minifloat_decode(c16, fp8_of(f));
}

// ---- QuantKVCache ---------------------------------------------------------------------------

template <class T>
QuantKVCache<T>::QuantKVCache(int n_layer, int width, int max_len, const QuantConfig& cfg)
    : KVCache<T>(n_layer, width), max_len_(max_len), cfg_(cfg) {
  if (max_len <= 0) throw std::invalid_argument("QuantKVCache: max_len must be positive");
  if (cfg.group_size <= 0) throw std::invalid_argument("QuantKVCache: group_size must be positive");
  const int bits = kv_quant_code_bits(cfg.format);
  for (int l = 0; l < n_layer; ++l) {
    Layer L{PackedCodes(bits), PackedCodes(bits), {}, {}, Mat<T>(0, width),
            Mat<T>::Zero(max_len, width), Mat<T>::Zero(max_len, width), 0, 0};
    layers_.push_back(std::move(L));
  }
  this->stats_.allocations = static_cast<std::uint64_t>(n_layer);
}

// Row-wise quantization (V, per-token K, fp16): position `first + r` gets groups of G channels.
template <class T>
void QuantKVCache<T>::quantize_rows(const Mat<double>& rows, int first, bool decode, PackedCodes& codes,
                                    std::vector<std::uint16_t>& params, Mat<T>& read) const {
  const int W = this->width_, G = cfg_.group_size, ng = row_groups(), np = kv_quant_params_per_group(cfg_.format);
  const auto n_pos = static_cast<std::uint64_t>(first + rows.rows());
  codes.resize(n_pos * W);
  params.resize(n_pos * ng * np);
  for (int r = 0; r < rows.rows(); ++r) {
    const std::uint64_t pos = static_cast<std::uint64_t>(first + r);
    for (int g = 0; g < ng; ++g) {
      const int c0 = g * G, n = std::min(G, W - c0);
      std::uint16_t* p = params.data() + (pos * ng + g) * np;
      quantize_group(&rows(r, c0), n, 1, cfg_.format, codes, pos * W + c0, 1, p);
      if (decode && cfg_.faults.drop_scale_on_decode && np > 0) p[0] = kFp16One;
      const GroupParams gp = decode_params(cfg_.format, p);  // read back from the stored buffers
      for (int c = c0; c < c0 + n; ++c)
        read(first + r, c) = static_cast<T>(dequantize_code(codes.get(pos * W + c), cfg_.format, gp));
    }
  }
}

// Per-channel keys: residual rows 0 .. G - 1 become positions n_quant_k .. n_quant_k + G - 1, one
// group (and one scale/zero) per channel.
template <class T>
void QuantKVCache<T>::quantize_key_group(Layer& L, bool decode) const {
  const int W = this->width_, G = cfg_.group_size, np = kv_quant_params_per_group(cfg_.format);
  const Mat<double> block = L.k_residual.topRows(G).template cast<double>();
  const auto first = static_cast<std::uint64_t>(L.n_quant_k), group = first / G;
  L.k_codes.resize((first + G) * W);
  L.k_params.resize((group + 1) * W * np);
  for (int c = 0; c < W; ++c) {
    std::uint16_t* p = L.k_params.data() + (group * W + c) * np;
    quantize_group(&block(0, c), G, W, cfg_.format, L.k_codes, first * W + c, W, p);
    if (decode && cfg_.faults.drop_scale_on_decode) p[0] = kFp16One;
    const GroupParams gp = decode_params(cfg_.format, p);
    for (int t = 0; t < G; ++t)
      L.k_read(L.n_quant_k + t, c) = static_cast<T>(dequantize_code(L.k_codes.get((first + t) * W + c), cfg_.format, gp));
  }
  const Eigen::Index rest = L.k_residual.rows() - G;
  Mat<T> residual = L.k_residual.bottomRows(rest);
  L.k_residual.swap(residual);
  L.n_quant_k += G;
}

template <class T>
void QuantKVCache<T>::append(int layer, const Mat<T>& k_new, const Mat<T>& v_new) {
  this->check_append(layer, k_new, v_new);
  Layer& L = layers_[layer];
  const int t_new = static_cast<int>(k_new.rows());
  if (L.len + t_new > max_len_)
    throw std::length_error(fmt::format("QuantKVCache: {} + {} positions exceed max_len {}", L.len, t_new, max_len_));
  const bool decode = t_new == 1;
  quantize_rows(v_new.template cast<double>(), L.len, decode, L.v_codes, L.v_params, L.v_read);
  if (!keys_per_channel()) {
    quantize_rows(k_new.template cast<double>(), L.len, decode, L.k_codes, L.k_params, L.k_read);
    L.n_quant_k = L.len + t_new;
  } else {
    // New keys join the full-precision residual; every full group of G is quantized at once.
    const Eigen::Index old = L.k_residual.rows();
    L.k_residual.conservativeResize(old + t_new, Eigen::NoChange);
    L.k_residual.bottomRows(t_new) = k_new;
    while (L.k_residual.rows() >= cfg_.group_size) quantize_key_group(L, decode);
    L.k_read.middleRows(L.n_quant_k, L.k_residual.rows()) = L.k_residual;  // exact until quantized
  }
  L.len += t_new;
  this->stats_.positions_written += static_cast<std::uint64_t>(t_new);
}

template <class T>
ConstMatView<T> QuantKVCache<T>::keys(int layer) const {
  this->check_layer(layer);
  return ConstMatView<T>(layers_[layer].k_read.data(), layers_[layer].len, this->width_);
}

template <class T>
ConstMatView<T> QuantKVCache<T>::values(int layer) const {
  this->check_layer(layer);
  return ConstMatView<T>(layers_[layer].v_read.data(), layers_[layer].len, this->width_);
}

template <class T>
int QuantKVCache<T>::length(int layer) const {
  this->check_layer(layer);
  return layers_[layer].len;
}

template <class T>
int QuantKVCache<T>::quantized_key_positions(int layer) const {
  this->check_layer(layer);
  return layers_[layer].n_quant_k;
}

template <class T>
void QuantKVCache<T>::truncate(int len) {
  for (const Layer& L : layers_) {  // validate every layer before changing any
    if (len < 0 || len > L.len)
      throw std::invalid_argument(fmt::format("truncate: length {} out of [0, {}]", len, L.len));
    if (keys_per_channel() && len < L.n_quant_k && len % cfg_.group_size != 0)
      throw std::invalid_argument(fmt::format("QuantKVCache::truncate: length {} falls inside a quantized key group "
                                              "of {} positions", len, cfg_.group_size));
  }
  const int W = this->width_, np = kv_quant_params_per_group(cfg_.format);
  const auto len64 = static_cast<std::uint64_t>(len);
  for (Layer& L : layers_) {
    L.v_codes.resize(len64 * W);
    L.v_params.resize(len64 * row_groups() * np);
    if (!keys_per_channel()) {
      L.k_codes.resize(len64 * W);
      L.k_params.resize(len64 * row_groups() * np);
      L.n_quant_k = len;
    } else if (len < L.n_quant_k) {
      L.n_quant_k = len;
      L.k_codes.resize(len64 * W);
      L.k_params.resize(len64 / cfg_.group_size * W * np);
      L.k_residual.resize(0, W);
    } else {
      L.k_residual.conservativeResize(len - L.n_quant_k, Eigen::NoChange);
    }
    L.len = len;
  }
}

template <class T>
QuantBytes QuantKVCache<T>::bytes(int layer) const {
  this->check_layer(layer);
  const Layer& L = layers_[layer];
  QuantBytes b;
  b.key_codes = L.k_codes.bytes();
  b.key_params = L.k_params.size() * sizeof(std::uint16_t);
  b.value_codes = L.v_codes.bytes();
  b.value_params = L.v_params.size() * sizeof(std::uint16_t);
  b.residual = checked_mul(static_cast<std::uint64_t>(L.k_residual.size()), sizeof(T), "QuantKVCache residual bytes");
  return b;
}

template class QuantKVCache<double>;
template class QuantKVCache<float>;

}  // namespace kvlab

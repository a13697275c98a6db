// A quantized KV cache: the keys and values are stored as packed low-bit codes plus per-group
// scales (and zero points), and dequantized on read. Formats:
//
//   fp16        16-bit codes, no scale: the reference the others are compared with
//   int8/4/2    asymmetric (min/scale) b-bit integers, as KIVI (Liu et al., "KIVI: A Tuning-Free
//               Asymmetric 2bit Quantization for KV Cache", arXiv 2402.02750):
//                 zero = min(group) rounded down to fp16, scale = (max - zero) / (2^b - 1) rounded
//                 up to fp16, q = round((x - zero) / scale) in [0, 2^b - 1], x̂ = zero + q · scale,
//                 so |x - x̂| <= scale / 2. Asymmetric rather than symmetric absmax because it
//                 uses all 2^b levels on a group that is not centred on 0 (at 2 bits symmetric
//                 absmax has 3 usable levels, asymmetric 4), which is KIVI's choice.
//   fp8 e4m3/e5m2  symmetric: scale = absmax(group) / max_finite rounded up to fp16, code =
//               fp8(x / scale) (round to nearest even, quant/minifloat.hpp), x̂ = scale · code.
//
// Layout (KIVI §3): K is quantized per channel, V per token.
//   K (KeyAxis::per_channel): each channel has its own scale/zero over a group of G consecutive
//     positions [gG, (g+1)G). Positions of a group that is not full yet (the last length mod G)
//     are kept in full precision in a residual buffer — KIVI's "residual" — and quantized
//     together the moment the group fills. Groups are aligned to absolute positions, so a
//     position dequantizes to the same bits whether it was written by one prefill append or by
//     G decode appends (and the residual is exact until then).
//   K (KeyAxis::per_token, the ablation KIVI argues against) and V: each position is quantized
//     at once, in groups of G consecutive channels (the last group of a row may be shorter).
//   fp16 has no groups and no residual.
// Codes are packed (8 / b per byte, little end first) in row-major [positions, width] order;
// scale and zero points are fp16 codes. bytes() counts these buffers. The dequantized copy that
// keys()/values() view ([max_len, width] of T per layer) is a read buffer standing in for the
// dequantization a fused attention kernel does on the fly; bytes() does not count it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cache/kv_cache.hpp"
#include "quant/minifloat.hpp"

namespace kvlab {

/// Storage format of a quantized cache element.
enum class KvQuantFormat { fp16, int8, int4, int2, fp8_e4m3, fp8_e5m2 };

/// "fp16", "int8", "int4", "int2", "fp8-e4m3", "fp8-e5m2".
const char* kv_quant_format_name(KvQuantFormat f);
/// Every format, fp16 first.
std::vector<KvQuantFormat> all_kv_quant_formats();
/// Bits per stored code: 16, 8, 4, 2, 8, 8.
int kv_quant_code_bits(KvQuantFormat f);
/// fp16 values per group kept beside the codes: 2 (scale, zero) for int, 1 (scale) for fp8, 0 for fp16.
int kv_quant_params_per_group(KvQuantFormat f);

/// Which axis the keys' scales run along (values are always per token).
enum class KeyAxis { per_channel, per_token };

/// Deliberate bugs for the unit tests (as SpecFaults): the check must fail with them.
struct QuantFaults {
  /// Appends of one position (decode) store a scale of 1 instead of the group's scale.
  bool drop_scale_on_decode = false;
};

struct QuantConfig {
  KvQuantFormat format = KvQuantFormat::int4;
  int group_size = 128;                  ///< G: positions per K group, channels per V group
  KeyAxis key_axis = KeyAxis::per_channel;
  QuantFaults faults;
};

/// Bytes a quantized cache holds, from the sizes of its real buffers.
struct QuantBytes {
  std::uint64_t key_codes = 0, key_params = 0;      ///< packed K codes; K scales/zeros (fp16)
  std::uint64_t value_codes = 0, value_params = 0;  ///< packed V codes; V scales/zeros (fp16)
  std::uint64_t residual = 0;  ///< full-precision K positions of not-yet-full groups (sizeof(T) each)
  std::uint64_t quantized() const { return key_codes + key_params + value_codes + value_params; }
  std::uint64_t total() const { return quantized() + residual; }
};

/// b-bit codes (b = 2, 4, 8 or 16) packed into bytes: code i sits at bit (i·b) mod 8 of byte
/// i·b / 8 (b = 16: two bytes, low byte first). Codes are unsigned.
class PackedCodes {
 public:
  explicit PackedCodes(int bits = 8);
  void resize(std::uint64_t n);  ///< n codes; new codes are 0
  void set(std::uint64_t i, std::uint32_t code);
  std::uint32_t get(std::uint64_t i) const;
  std::uint64_t size() const { return n_; }
  std::uint64_t bytes() const { return data_.size(); }  ///< bytes actually held
  int bits() const { return bits_; }

 private:
  int bits_;
  std::uint64_t n_ = 0;
  std::vector<std::uint8_t> data_;
};

/// Quantizes the n values x[0], x[stride], ... as one group in format f: code i goes to
/// codes[first + i · code_stride], the group's fp16 parameters (scale, then zero for int) to
/// params[0..kv_quant_params_per_group(f)). dequantize_code reads them back. Throws
/// std::domain_error on a non-finite value or one outside fp16's range (|x| > 65504).
void quantize_group(const double* x, int n, int stride, KvQuantFormat f, PackedCodes& codes, std::uint64_t first,
                    std::uint64_t code_stride, std::uint16_t* params);
/// A group's parameters decoded from their fp16 codes (scale 1 and zero 0 where the format has none).
struct GroupParams {
  double scale = 1.0, zero = 0.0;
};
GroupParams decode_params(KvQuantFormat f, const std::uint16_t* params);
/// x̂ of one code of a group: zero + code · scale (int), scale · fp8(code), fp16(code).
double dequantize_code(std::uint32_t code, KvQuantFormat f, const GroupParams& p);

/// KVCache<T> over packed codes (see the file comment for formats and layout).
///   per layer: K codes [n_quantized_k, width] packed, K params per group, K residual
///   [length - n_quantized_k, width] of T, V codes [length, width] packed, V params per position.
template <class T>
class QuantKVCache final : public KVCache<T> {
 public:
  /// n_layer layers of `width` = n_kv_head · head_dim channels, up to max_len positions.
  /// Throws std::invalid_argument when a size or cfg.group_size is not positive.
  QuantKVCache(int n_layer, int width, int max_len, const QuantConfig& cfg);
  /// As KVCache::append; also std::domain_error from quantize_group.
  void append(int layer, const Mat<T>& k_new, const Mat<T>& v_new) override;
  ConstMatView<T> keys(int layer) const override;    ///< dequantized [length, width]
  ConstMatView<T> values(int layer) const override;  ///< dequantized [length, width]
  int length(int layer) const override;
  /// Also throws std::invalid_argument when len falls inside a quantized K group (its positions'
  /// full-precision values are gone; re-quantizing the dequantized ones would change them).
  void truncate(int len) override;
  /// The bytes `layer` holds (codes, fp16 parameters, residual).
  QuantBytes bytes(int layer) const;
  /// K positions of `layer` held as codes (the rest of length() is the residual).
  int quantized_key_positions(int layer) const;
  const QuantConfig& config() const { return cfg_; }

 private:
  struct Layer {
    PackedCodes k_codes, v_codes;
    std::vector<std::uint16_t> k_params, v_params;
    Mat<T> k_residual;     // [length - n_quant_k, width]
    Mat<T> k_read, v_read;  // dequantized [max_len, width]
    int n_quant_k = 0;
    int len = 0;
  };
  // Quantizes rows [T, width] as positions first .. first + T - 1, in groups of G channels per
  // row, into codes/params, and dequantizes them (from those buffers) into read.
  void quantize_rows(const Mat<double>& rows, int first, bool decode, PackedCodes& codes,
                     std::vector<std::uint16_t>& params, Mat<T>& read) const;
  // Quantizes the first G residual rows of L's keys as one group per channel.
  void quantize_key_group(Layer& L, bool decode) const;
  bool keys_per_channel() const {
    return cfg_.key_axis == KeyAxis::per_channel && cfg_.format != KvQuantFormat::fp16;
  }
  int row_groups() const { return (this->width_ + cfg_.group_size - 1) / cfg_.group_size; }

  int max_len_;
  QuantConfig cfg_;
  std::vector<Layer> layers_;
};

}  // namespace kvlab

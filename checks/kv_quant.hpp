// kv-quant (000 §4.5; 003 part 4): options, what it measures, and its testable steps. See kv_quant.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "quant/quant_cache.hpp"
#include "framework/spec.hpp"

namespace kvlab::checks::kv_quant {

struct KvQuantOptions {
  int tokens = 128;            ///< T positions written to each cache
  int kv_heads = 2;            ///< K/V heads (the query heads are as many: MHA)
  int head_dim = 64;           ///< even, >= 8; width = kv_heads · head_dim channels
  int queries = 8;             ///< decode queries attending over the T positions
  int group_size = 128;        ///< G of the judged rows (>= 8); the tables also run 32, 64, 128
  int outlier_channels = 4;    ///< key channels given a large magnitude in the outlier set
  double outlier_scale = 20;   ///< their offset ± (KIVI's large-magnitude channels) on N(0, 1), >= 8
};

/// The library parts kv-quant uses; unit tests replace them with broken ones.
struct KvQuantParts {
  /// A one-layer cache of `width` channels for up to max_len positions; empty: QuantKVCache.
  std::function<std::unique_ptr<QuantKVCache<double>>(int width, int max_len, const QuantConfig&)> make_cache;
};

/// The bytes of one cache's real buffers: 2G positions of K and V in format `format`, groups of G.
struct KvBytesCell {
  KvQuantFormat format = KvQuantFormat::fp16;
  int group = 0;
  QuantBytes bytes;
};

/// One (keys, format, G) cache written with the whole sequence, against the check's own bounds.
struct KvErrorCell {
  bool outlier_keys = false;   ///< the keys with outlier channels (else the N(0, 1) keys)
  KvQuantFormat format = KvQuantFormat::fp16;
  int group = 0;
  double element = 0;          ///< max element error / its bound, K and V
  double fp8_relative = 0;     ///< fp8: max relative error over the normal range (0 otherwise)
  double attention = 0;        ///< max attention output error / the derived bound
  double output_relative = 0;  ///< ‖Ô − O‖ / ‖O‖
};

/// KIVI's comparison for one int (keys, format, G): K quantized per channel vs per token.
struct KiviCell {
  bool outlier_keys = false;
  KvQuantFormat format = KvQuantFormat::int8;
  int group = 0;
  double k_per_channel = 0, k_per_token = 0;            ///< ‖K̂ − K‖ / ‖K‖
  double out_per_channel = 0, out_per_token = 0;        ///< output error from K alone (V exact)
};

/// One format's reads of the outlier keys: one prefill vs prefill + decode, max |Δ|.
struct KvPathCell {
  KvQuantFormat format = KvQuantFormat::fp16;
  double dk = 0, dv = 0;
};

/// What kv-quant measured.
struct KvQuantMeasured {
  KvQuantOptions options;
  std::uint64_t seed = 0;
  std::vector<KvQuantFormat> formats;  ///< every format, in all_kv_quant_formats() order
  std::vector<int> groups;             ///< the G of the tables: --group-size and 32, 64, 128 up to --tokens
  std::vector<int> channels;           ///< the outlier key channels, ascending
  std::vector<KvBytesCell> bytes;      ///< groups × formats
  std::vector<KvErrorCell> errors;     ///< random then outlier keys × groups × formats (fp16 once)
  std::vector<KiviCell> kivi;          ///< the int cells of `errors`, same order
  double ordinary_diff = 0;            ///< max |ΔK̂| on the ordinary channels, with vs without the outliers
  std::vector<KvPathCell> paths;       ///< formats, at G
};

/// Writes the seeded K/V through the quantized caches (`parts` or the library's) and measures
/// bytes, errors against the check's bounds, KIVI's comparison and the prefill/decode paths.
KvQuantMeasured measure_kv_quant(const KvQuantOptions& o, const RunContext& ctx, const KvQuantParts& parts = {});
/// The verdict rows: bytes against the layout's formula (exact), the 003 part 4 ratios, every
/// element and attention output within its bound, fp8's relative error, KIVI's count, the
/// ordinary channels' bits, and prefill = decode (exact).
std::vector<Expectation> judge_kv_quant(const KvQuantMeasured& m);

/// The check as data (registered as `kv-quant`).
const CheckDef<KvQuantOptions, KvQuantMeasured>& kv_quant_check();

/// Runs the check. Throws InputError naming the option on bad input.
Result run_kv_quant(const KvQuantOptions& o, const RunContext& ctx, const KvQuantParts& parts = {});

}  // namespace kvlab::checks::kv_quant

namespace kvlab::checks {
using namespace kv_quant;  // callers write kvlab::checks::X for this check's X
}  // namespace kvlab::checks

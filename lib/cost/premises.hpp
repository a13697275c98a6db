// The course's premises: the figures its documents assume rather than derive, each named once
// with where it is stated. The checks reproduce the documents' arithmetic from these; a check's
// options may change them (--params, --model, --gpu), the defaults are these. Figures of a
// catalogue entry (a model's shape, a GPU's rates) are read from data/ through io/catalogue.hpp;
// what is here is which entry the course means, and the few rates the documents write out
// themselves (their arithmetic uses the document's number, not the catalogue's).
#pragma once

#include <cstdint>

namespace kvlab::premises {

/// The course's "7B": a round N = 7e9 parameters, the assumption that reproduces 004 §1.5's
/// figures (2N = 14 GB of weights, ≈ 140 tok/s at batch 1); llama-2-7b's true count, from the
/// catalogue, is 6.74e9. Source: 004 §1.5 (group 5: "7B、MHA、A100").
inline constexpr double kParams7b = 7e9;

/// Bytes per weight of the course's models: fp16/bf16. Source: 004 §1.5 ("2N bytes"); 000 §2.3.
inline constexpr double kBytesPerParam = 2.0;

/// The model whose shape (32 layers × 32 heads × 128, MHA) and cache the course's 7B figures use.
/// Source: 004 §1.5 (group 5: a 7B with MHA).
inline constexpr const char* kModel7b = "llama-2-7b";

/// The GPU the course costs on: the A100 SXM 80GB (catalogue entry a100-80gb). Source: 004 §1.5;
/// 000 §2.3, §3.1, §9.2.
inline constexpr const char* kGpu = "a100-80gb";

/// The A100's dense BF16 tensor rate, as the documents write it: 312 TFLOP/s. Source: 004 §1.5
/// ("bf16 稠密峰值 312 TFLOP/s").
inline constexpr double kA100Bf16FlopsPerS = 312e12;

/// The A100-80GB's (SXM) HBM bandwidth: 2.039 TB/s, the datasheet figure 004 §1.5 rounds to
/// 2.04 TB/s (ridge 312 / 2.039 ≈ 153 FLOP/B, "拐点约 153"). Source: 004 §1.5; NVIDIA A100 datasheet.
inline constexpr double kA100_80gbBandwidthBytesPerS = 2.039e12;

/// The A100-40GB's bandwidth, 1.555 TB/s (ridge 312 / 1.555 ≈ 200 FLOP/B): the card whose ridge
/// 000 §3.1's "A100 BF16 ≈ 200 FLOPs/byte" is. Source: 000 §3.1; NVIDIA A100 datasheet.
inline constexpr double kA100_40gbBandwidthBytesPerS = 1.555e12;

/// The vanilla speculative-decoding draft of 000 §9.3: a 7B model in fp16 (+14 GB beside a 70B
/// target). Source: 000 §9.3 ("draft model（7B fp16）+14 GB").
inline constexpr double kDraftParams7b = 7e9;

/// The context length of the course's sizing examples: L_ctx = 4096. Source: 000 §2.2, §9.1, §9.3.
inline constexpr std::uint64_t kCtx = 4096;

}  // namespace kvlab::premises

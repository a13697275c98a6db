// One sequence's view of a model and its KV cache: what a decoding loop drives. Two implementations:
// the CPU mini-GPT with a preallocated cache (here) and the device model (gpu::DeviceSequence,
// backend/device_gpt.hpp), so that the speculative loop (spec/loop.hpp) runs unchanged on either.
#pragma once

#include <memory>
#include <span>

#include "cache/kv_cache.hpp"
#include "core/tensor.hpp"
#include "model/config.hpp"
#include "model/gpt.hpp"

namespace kvlab {

template <class T>
class SequenceModel {
 public:
  virtual ~SequenceModel() = default;
  virtual const ModelConfig& config() const = 0;
  /// Logits [tokens.size(), vocab] of `tokens` at positions length(), length() + 1, ...; their K
  /// and V are appended to the cache. Throws InputError for a bad token id or a full cache.
  virtual Mat<T> forward(std::span<const int> tokens) = 0;
  /// Positions held in the cache.
  virtual int length() const = 0;
  /// Keeps positions 0 .. len − 1 (a rollback); std::invalid_argument / InputError for len > length().
  virtual void truncate(int len) = 0;
};

/// A MiniGPT (not owned: it must outlive this) with a PreallocCache of `max_len` positions.
template <class T>
class CpuSequenceModel final : public SequenceModel<T> {
 public:
  CpuSequenceModel(const MiniGPT<T>& model, int max_len)
      : model_(model), cache_(model.make_cache(CacheKind::prealloc, max_len)) {}
  const ModelConfig& config() const override { return model_.config(); }
  Mat<T> forward(std::span<const int> tokens) override { return model_.forward(tokens, cache_->length(0), *cache_); }
  int length() const override { return cache_->length(0); }
  void truncate(int len) override { cache_->truncate(len); }

 private:
  const MiniGPT<T>& model_;
  std::unique_ptr<KVCache<T>> cache_;
};

}  // namespace kvlab

// One sequence's view of a model and its KV cache: what a decoding loop drives. Two implementations:
// the CPU mini-GPT with a preallocated cache (here) and the device model (gpu::DeviceSequence,
// model/device_gpt.hpp), so that the speculative loop (spec/loop.hpp) runs unchanged on either.
#pragma once

#include <algorithm>
#include <memory>
#include <span>
#include <stdexcept>
#include <vector>

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

/// A MiniGPT (not owned) with a PreallocCache of `max_len` positions that has run `prefix` once:
/// a forward of exactly `prefix` on an empty cache copies that run's K/V into the cache and returns
/// its logits, bit for bit what recomputing them gives (the forward is deterministic), instead of
/// recomputing. For loops that decode many samples from one prompt (spec-exact's and spec-real's
/// distribution tests): truncate(0) between samples. Any other forward runs the model.
template <class T>
class PrefilledSequenceModel final : public SequenceModel<T> {
 public:
  /// Throws as MiniGPT::forward for a bad prefix; std::invalid_argument when max_len < its length.
  PrefilledSequenceModel(const MiniGPT<T>& model, std::span<const int> prefix, int max_len)
      : model_(model), prefix_(prefix.begin(), prefix.end()), cache_(model.make_cache(CacheKind::prealloc, max_len)) {
    if (static_cast<int>(prefix_.size()) > max_len)
      throw std::invalid_argument("PrefilledSequenceModel: the prefix is longer than max_len");
    if (prefix_.empty()) return;
    logits_ = model_.forward(prefix_, 0, *cache_);
    for (int l = 0; l < cache_->n_layer(); ++l) {
      keys_.emplace_back(cache_->keys(l));
      values_.emplace_back(cache_->values(l));
    }
    cache_->truncate(0);
  }
  const ModelConfig& config() const override { return model_.config(); }
  Mat<T> forward(std::span<const int> tokens) override {
    if (!prefix_.empty() && cache_->length(0) == 0 && std::equal(tokens.begin(), tokens.end(), prefix_.begin(), prefix_.end())) {
      for (int l = 0; l < cache_->n_layer(); ++l) cache_->append(l, keys_[static_cast<std::size_t>(l)], values_[static_cast<std::size_t>(l)]);
      return logits_;
    }
    return model_.forward(tokens, cache_->length(0), *cache_);
  }
  int length() const override { return cache_->length(0); }
  void truncate(int len) override { cache_->truncate(len); }

 private:
  const MiniGPT<T>& model_;
  std::vector<int> prefix_;
  std::unique_ptr<KVCache<T>> cache_;
  Mat<T> logits_;
  std::vector<Mat<T>> keys_, values_;  // per cache layer [prefix, width]
};

}  // namespace kvlab

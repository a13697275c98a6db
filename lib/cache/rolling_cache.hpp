// A rolling sliding-window KV cache (Mistral 7B's "rolling buffer cache"; 004 §1.6, §2.7; 003 part 2).
//
// Each layer keeps the K and V of the last W positions in a ring of W rows: position p is written to
// slot p mod W, over the oldest position once the ring is full, so memory stays at W positions
// however long the sequence. Reads return the held positions in logical order (oldest first): after
// a wrap-around the ring is straightened in place (std::rotate, no second buffer), as mistral-src's
// `unrotate` does with a copy. first_position() says which absolute position row 0 is, so attention
// can mask by absolute position (and RoPE positions keep counting past W).
#pragma once

#include <cstdint>
#include <vector>

#include "cache/kv_cache.hpp"
#include "core/tensor.hpp"

namespace kvlab {

template <class T>
class RollingCache final : public KVCache<T> {
 public:
  /// n_layer rings of [window, width] for K and for V. Throws std::invalid_argument when a size is
  /// not positive, InputError when n_layer·2·window·width elements overflow.
  RollingCache(int n_layer, int width, int window);

  /// Appends T_new positions to `layer` (k_new, v_new [T_new, width]); when more than `window`
  /// positions would be held, the oldest are overwritten. Never throws length_error.
  void append(int layer, const Mat<T>& k_new, const Mat<T>& v_new) override;
  /// Held keys of `layer` in logical order: a view [length(layer), width], row r = absolute
  /// position first_position(layer) + r. Valid until the next call on this cache.
  ConstMatView<T> keys(int layer) const override;
  ConstMatView<T> values(int layer) const override;
  /// Positions held: min(window, positions appended) (after truncate: what truncate kept).
  int length(int layer) const override;
  /// Keeps the oldest `len` held positions of every layer (first_position unchanged).
  void truncate(int len) override;
  int first_position(int layer) const override;

  int window() const { return window_; }
  /// Bytes of the ring buffers, counted from the matrices allocated: n_layer·2·window·width·sizeof(T).
  std::uint64_t bytes_allocated() const;
  /// Times the write slot of `layer` came back to slot 0 after the first write (wrap-arounds).
  std::uint64_t wraps(int layer) const;

 private:
  void straighten(int layer) const;  // rotates the ring so that slot 0 is the oldest position

  int window_;
  mutable std::vector<Mat<T>> k_, v_;  // per layer [window, width], a ring
  mutable std::vector<int> head_;      // per layer: slot of the oldest held position
  std::vector<int> len_;               // per layer: positions held
  std::vector<int> first_;             // per layer: absolute position of the oldest held
  std::vector<std::uint64_t> written_; // per layer: positions ever appended
};

}  // namespace kvlab

#include "cache/rolling_cache.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "core/error.hpp"

namespace kvlab {

template <class T>
RollingCache<T>::RollingCache(int n_layer, int width, int window)
    : KVCache<T>(n_layer, width), window_(window), head_(n_layer, 0), len_(n_layer, 0),
      first_(n_layer, 0), written_(n_layer, 0) {
  if (window <= 0) throw std::invalid_argument("RollingCache: window must be positive");
  const char* what = "RollingCache: n_layer x 2 x window x width x sizeof(T)";
  checked_mul(checked_mul(checked_mul(static_cast<std::uint64_t>(n_layer), 2, what), static_cast<std::uint64_t>(window), what),
              checked_mul(static_cast<std::uint64_t>(width), sizeof(T), what), what);
  for (int l = 0; l < n_layer; ++l) {
    k_.emplace_back(Mat<T>::Zero(window, width));
    v_.emplace_back(Mat<T>::Zero(window, width));
  }
  this->stats_.allocations = static_cast<std::uint64_t>(n_layer);
}

template <class T>
void RollingCache<T>::append(int layer, const Mat<T>& k_new, const Mat<T>& v_new) {
  this->check_append(layer, k_new, v_new);
  for (Eigen::Index r = 0; r < k_new.rows(); ++r) {
    int slot;
    if (len_[layer] < window_) {  // not full yet: the next free slot after the oldest
      slot = (head_[layer] + len_[layer]) % window_;
      ++len_[layer];
    } else {  // full: overwrite the oldest, which moves one on
      slot = head_[layer];
      head_[layer] = (head_[layer] + 1) % window_;
      ++first_[layer];
    }
    k_[layer].row(slot) = k_new.row(r);
    v_[layer].row(slot) = v_new.row(r);
    ++written_[layer];
  }
  this->stats_.positions_written += static_cast<std::uint64_t>(k_new.rows());
}

template <class T>
void RollingCache<T>::straighten(int layer) const {
  if (head_[layer] == 0) return;
  // The ring is full whenever head != 0 (head only moves on an overwrite), so rotating all rows
  // left by `head` puts the oldest position in row 0. Rows are contiguous (row-major).
  const std::ptrdiff_t shift = static_cast<std::ptrdiff_t>(head_[layer]) * this->width_;
  std::rotate(k_[layer].data(), k_[layer].data() + shift, k_[layer].data() + k_[layer].size());
  std::rotate(v_[layer].data(), v_[layer].data() + shift, v_[layer].data() + v_[layer].size());
  head_[layer] = 0;
}

template <class T>
ConstMatView<T> RollingCache<T>::keys(int layer) const {
  this->check_layer(layer);
  straighten(layer);
  return ConstMatView<T>(k_[layer].data(), len_[layer], this->width_);
}

template <class T>
ConstMatView<T> RollingCache<T>::values(int layer) const {
  this->check_layer(layer);
  straighten(layer);
  return ConstMatView<T>(v_[layer].data(), len_[layer], this->width_);
}

template <class T>
int RollingCache<T>::length(int layer) const {
  this->check_layer(layer);
  return len_[layer];
}

template <class T>
int RollingCache<T>::first_position(int layer) const {
  this->check_layer(layer);
  return first_[layer];
}

template <class T>
void RollingCache<T>::truncate(int len) {
  for (int l = 0; l < this->n_layer_; ++l) {
    if (len < 0 || len > len_[l])
      throw std::invalid_argument(fmt::format("truncate: length {} out of [0, {}]", len, len_[l]));
    straighten(l);  // logical order = slot order, so the kept positions are slots 0 .. len - 1
    len_[l] = len;
  }
}

template <class T>
std::uint64_t RollingCache<T>::bytes_allocated() const {
  std::uint64_t elements = 0;
  for (int l = 0; l < this->n_layer_; ++l)
    elements += static_cast<std::uint64_t>(k_[l].size()) + static_cast<std::uint64_t>(v_[l].size());
  return checked_mul(elements, sizeof(T), "RollingCache bytes");
}

template <class T>
std::uint64_t RollingCache<T>::wraps(int layer) const {
  this->check_layer(layer);
  return written_[layer] == 0 ? 0 : (written_[layer] - 1) / static_cast<std::uint64_t>(window_);
}

template class RollingCache<double>;
template class RollingCache<float>;

}  // namespace kvlab

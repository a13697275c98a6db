#include "cache/kv_cache.hpp"

#include <stdexcept>

#include <fmt/format.h>

namespace kvlab {

// ---- KVCache --------------------------------------------------------------------------------

template <class T>
KVCache<T>::KVCache(int n_layer, int width) : n_layer_(n_layer), width_(width) {
  if (n_layer <= 0 || width <= 0)
    throw std::invalid_argument(fmt::format("KVCache: n_layer ({}) and width ({}) must be positive",
                                            n_layer, width));
}

template <class T>
void KVCache<T>::check_layer(int layer) const {
  if (layer < 0 || layer >= n_layer_)
    throw std::invalid_argument(fmt::format("KVCache: layer {} out of [0, {})", layer, n_layer_));
}

template <class T>
void KVCache<T>::check_append(int layer, const Mat<T>& k_new, const Mat<T>& v_new) const {
  check_layer(layer);
  if (k_new.cols() != width_ || v_new.cols() != width_ || k_new.rows() != v_new.rows())
    throw std::invalid_argument(fmt::format("KVCache::append: K [{}, {}] and V [{}, {}], want [T, {}]",
                                            k_new.rows(), k_new.cols(), v_new.rows(), v_new.cols(),
                                            width_));
}

// ---- ConcatCache ----------------------------------------------------------------------------

template <class T>
ConcatCache<T>::ConcatCache(int n_layer, int width)
    : KVCache<T>(n_layer, width), k_(n_layer, Mat<T>(0, width)), v_(n_layer, Mat<T>(0, width)) {}

template <class T>
void ConcatCache<T>::append(int layer, const Mat<T>& k_new, const Mat<T>& v_new) {
  this->check_append(layer, k_new, v_new);
  const auto old_len = k_[layer].rows();
  // torch.cat: a fresh buffer, the old rows copied over, the new rows after them.
  Mat<T> k(old_len + k_new.rows(), this->width_), v(old_len + v_new.rows(), this->width_);
  k.topRows(old_len) = k_[layer];
  v.topRows(old_len) = v_[layer];
  k.bottomRows(k_new.rows()) = k_new;
  v.bottomRows(v_new.rows()) = v_new;
  k_[layer].swap(k);
  v_[layer].swap(v);
  this->stats_.positions_copied += static_cast<std::uint64_t>(old_len);
  this->stats_.positions_written += static_cast<std::uint64_t>(k_new.rows());
  this->stats_.allocations += 1;
}

template <class T>
ConstMatView<T> ConcatCache<T>::keys(int layer) const {
  this->check_layer(layer);
  return ConstMatView<T>(k_[layer].data(), k_[layer].rows(), this->width_);
}

template <class T>
ConstMatView<T> ConcatCache<T>::values(int layer) const {
  this->check_layer(layer);
  return ConstMatView<T>(v_[layer].data(), v_[layer].rows(), this->width_);
}

template <class T>
int ConcatCache<T>::length(int layer) const {
  this->check_layer(layer);
  return static_cast<int>(k_[layer].rows());
}

template <class T>
void ConcatCache<T>::truncate(int len) {
  for (int l = 0; l < this->n_layer_; ++l) {
    if (len < 0 || len > k_[l].rows())
      throw std::invalid_argument(fmt::format("truncate: length {} out of [0, {}]", len, k_[l].rows()));
    k_[l].conservativeResize(len, Eigen::NoChange);
    v_[l].conservativeResize(len, Eigen::NoChange);
  }
}

// ---- PreallocCache --------------------------------------------------------------------------

template <class T>
PreallocCache<T>::PreallocCache(int n_layer, int width, int max_len)
    : KVCache<T>(n_layer, width), max_len_(max_len), len_(n_layer, 0) {
  if (max_len <= 0) throw std::invalid_argument("PreallocCache: max_len must be positive");
  for (int l = 0; l < n_layer; ++l) {
    k_.emplace_back(Mat<T>::Zero(max_len, width));
    v_.emplace_back(Mat<T>::Zero(max_len, width));
  }
  this->stats_.allocations = static_cast<std::uint64_t>(n_layer);
}

template <class T>
void PreallocCache<T>::append(int layer, const Mat<T>& k_new, const Mat<T>& v_new) {
  this->check_append(layer, k_new, v_new);
  const int t_new = static_cast<int>(k_new.rows());
  if (len_[layer] + t_new > max_len_)
    throw std::length_error(fmt::format("PreallocCache: {} + {} positions exceed max_len {}",
                                        len_[layer], t_new, max_len_));
  k_[layer].middleRows(len_[layer], t_new) = k_new;  // in place, like self.k[:, :, pos:pos+T] = k_new
  v_[layer].middleRows(len_[layer], t_new) = v_new;
  len_[layer] += t_new;
  this->stats_.positions_written += static_cast<std::uint64_t>(t_new);
}

template <class T>
ConstMatView<T> PreallocCache<T>::keys(int layer) const {
  this->check_layer(layer);
  return ConstMatView<T>(k_[layer].data(), len_[layer], this->width_);  // rows are contiguous
}

template <class T>
ConstMatView<T> PreallocCache<T>::values(int layer) const {
  this->check_layer(layer);
  return ConstMatView<T>(v_[layer].data(), len_[layer], this->width_);
}

template <class T>
int PreallocCache<T>::length(int layer) const {
  this->check_layer(layer);
  return len_[layer];
}

template <class T>
void PreallocCache<T>::truncate(int len) {
  for (int l = 0; l < this->n_layer_; ++l) {
    if (len < 0 || len > len_[l])
      throw std::invalid_argument(fmt::format("truncate: length {} out of [0, {}]", len, len_[l]));
    len_[l] = len;  // O(1): the rows past len are simply overwritten by the next append
  }
}

template <class T>
std::unique_ptr<KVCache<T>> make_cache(CacheKind kind, int n_layer, int width, int max_len) {
  if (kind == CacheKind::concat) return std::make_unique<ConcatCache<T>>(n_layer, width);
  return std::make_unique<PreallocCache<T>>(n_layer, width, max_len);
}

template class KVCache<double>;
template class KVCache<float>;
template class ConcatCache<double>;
template class ConcatCache<float>;
template class PreallocCache<double>;
template class PreallocCache<float>;
template std::unique_ptr<KVCache<double>> make_cache<double>(CacheKind, int, int, int);
template std::unique_ptr<KVCache<float>> make_cache<float>(CacheKind, int, int, int);

}  // namespace kvlab

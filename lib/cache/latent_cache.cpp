#include "cache/latent_cache.hpp"

#include <stdexcept>

#include <fmt/format.h>

namespace kvlab {

template <class T>
LatentCache<T>::LatentCache(int n_layer, int latent_dim, int rope_dim, int max_len)
    : n_layer_(n_layer), latent_dim_(latent_dim), rope_dim_(rope_dim), max_len_(max_len) {
  if (n_layer <= 0 || latent_dim <= 0 || rope_dim < 0 || max_len <= 0)
    throw std::invalid_argument(fmt::format("LatentCache: n_layer {}, latent_dim {}, rope_dim {}, max_len {}",
                                            n_layer, latent_dim, rope_dim, max_len));
  c_.assign(n_layer, Mat<T>::Zero(max_len, latent_dim));
  r_.assign(n_layer, Mat<T>::Zero(max_len, rope_dim));
  len_.assign(n_layer, 0);
  stats_.allocations = static_cast<std::uint64_t>(n_layer);
}

template <class T>
void LatentCache<T>::check_layer(int layer) const {
  if (layer < 0 || layer >= n_layer_)
    throw std::invalid_argument(fmt::format("LatentCache: layer {} out of [0, {})", layer, n_layer_));
}

template <class T>
void LatentCache<T>::append(int layer, const Mat<T>& c_kv, const Mat<T>& k_rope) {
  check_layer(layer);
  if (c_kv.cols() != latent_dim_ || k_rope.cols() != rope_dim_ || c_kv.rows() != k_rope.rows())
    throw std::invalid_argument(fmt::format("LatentCache::append: c_kv [{}, {}], k_rope [{}, {}], want [T, {}], [T, {}]",
                                            c_kv.rows(), c_kv.cols(), k_rope.rows(), k_rope.cols(), latent_dim_,
                                            rope_dim_));
  const int n = static_cast<int>(c_kv.rows());
  if (len_[layer] + n > max_len_)
    throw std::length_error(fmt::format("LatentCache: {} + {} positions exceed max_len {}", len_[layer], n, max_len_));
  c_[layer].middleRows(len_[layer], n) = c_kv;
  r_[layer].middleRows(len_[layer], n) = k_rope;
  len_[layer] += n;
  stats_.positions_written += static_cast<std::uint64_t>(n);
  elements_written_ += static_cast<std::uint64_t>(c_kv.size() + k_rope.size());
}

template <class T>
ConstMatView<T> LatentCache<T>::latents(int layer) const {
  check_layer(layer);
  return ConstMatView<T>(c_[layer].data(), len_[layer], latent_dim_);
}

template <class T>
ConstMatView<T> LatentCache<T>::rope_keys(int layer) const {
  check_layer(layer);
  return ConstMatView<T>(r_[layer].data(), len_[layer], rope_dim_);
}

template <class T>
int LatentCache<T>::length(int layer) const {
  check_layer(layer);
  return len_[layer];
}

template <class T>
void LatentCache<T>::truncate(int len) {
  for (int l = 0; l < n_layer_; ++l) {
    if (len < 0 || len > len_[l])
      throw std::invalid_argument(fmt::format("LatentCache::truncate: {} outside [0, {}]", len, len_[l]));
  }
  for (int& l : len_) l = len;
}

template <class T>
std::uint64_t LatentCache<T>::elements_held() const {
  std::uint64_t n = 0;
  for (int l = 0; l < n_layer_; ++l)
    n += static_cast<std::uint64_t>(len_[l]) * static_cast<std::uint64_t>(latent_dim_ + rope_dim_);
  return n;
}

template class LatentCache<double>;
template class LatentCache<float>;

}  // namespace kvlab

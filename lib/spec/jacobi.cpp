#include "spec/jacobi.hpp"

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/finite.hpp"

namespace kvlab::spec {

std::vector<int> jacobi_update(const Mat<double>& logits, int prompt_len, int n) {
  std::vector<int> y(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    const Eigen::Index row = prompt_len - 1 + i;  // the position that predicts block token i
    y[static_cast<std::size_t>(i)] = checked_argmax(logits.row(row), "jacobi_update: logits");
  }
  return y;
}

template <class T>
JacobiRun jacobi_decode(const MiniGPT<T>& model, std::span<const int> prompt,
                        std::span<const int> init, int max_iterations, const JacobiUpdate& update) {
  const auto& c = model.config();
  const int p = static_cast<int>(prompt.size()), n = static_cast<int>(init.size());
  if (p < 1) throw InputError("prompt: must hold at least one token");
  if (n < 1) throw InputError("block: must hold at least one token");
  if (max_iterations < 1)
    throw InputError(fmt::format("max_iterations: must be >= 1 (got {})", max_iterations));
  if (p + n > c.block_size)
    throw InputError(fmt::format("block: prompt {} + block {} tokens exceed block_size = {}", p, n,
                                 c.block_size));
  for (int t : init)
    if (t < 0 || t >= c.vocab_size)
      throw InputError(fmt::format("block: token id {} outside [0, {})", t, c.vocab_size));

  JacobiRun run;
  run.iterates.emplace_back(init.begin(), init.end());
  std::vector<int> seq(prompt.begin(), prompt.end());
  seq.insert(seq.end(), init.begin(), init.end());
  while (run.forwards < max_iterations) {
    auto cache = model.make_cache(CacheKind::prealloc, p + n);
    const Mat<double> logits = model.forward(seq, 0, *cache).template cast<double>();
    ++run.forwards;
    std::vector<int> next = update(logits, p, n);
    if (static_cast<int>(next.size()) != n)
      throw InputError(fmt::format("update: returned {} tokens for a block of {}", next.size(), n));
    const bool fixed = next == run.iterates.back();
    std::copy(next.begin(), next.end(), seq.begin() + p);
    run.iterates.push_back(std::move(next));
    if (fixed) {
      run.converged = true;
      break;
    }
  }
  return run;
}

template JacobiRun jacobi_decode<double>(const MiniGPT<double>&, std::span<const int>,
                                         std::span<const int>, int, const JacobiUpdate&);
template JacobiRun jacobi_decode<float>(const MiniGPT<float>&, std::span<const int>,
                                        std::span<const int>, int, const JacobiUpdate&);

}  // namespace kvlab::spec

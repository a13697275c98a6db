#include "model_flags.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "framework/options.hpp"

namespace kvlab::app {

void add_model_shape_options(CLI::App& cmd, const ModelShapeTargets& t, const ModelShapeLimits& lim) {
  using kvlab::checks::IntRange;
  const auto dflt = [](int v) { return fmt::format(" (default {})", v); };
  const auto derived = [&](int v, const char* what) {
    return v == 0 ? fmt::format(" (default 0 = {})", what) : fmt::format(" (default {})", v);
  };
  cmd.add_option("--n-layer,--layers", *t.n_layer,
                 fmt::format("Transformer blocks n_layer, 1 to {}", lim.max_layers) + dflt(*t.n_layer))
      ->transform(IntRange(1, lim.max_layers));
  cmd.add_option("--d-model", *t.d_model, fmt::format("Model width d_model, 1 to {}", lim.max_dim) + dflt(*t.d_model))
      ->transform(IntRange(1, lim.max_dim));
  cmd.add_option("--n-head,--heads", *t.n_head,
                 fmt::format("Query heads n_head, 1 to {}", lim.max_heads) + dflt(*t.n_head))
      ->transform(IntRange(1, lim.max_heads));
  cmd.add_option("--n-kv-head,--kv-heads", *t.n_kv_head,
                 fmt::format("K/V heads n_kv_head, {} to {}; must divide n_head", lim.min_derived, lim.max_heads) +
                     derived(*t.n_kv_head, "n_head, MHA"))
      ->transform(IntRange(lim.min_derived, lim.max_heads));
  cmd.add_option("--head-dim", *t.head_dim,
                 fmt::format("Head width head_dim, {} to {}", lim.min_derived, lim.max_head_dim) +
                     derived(*t.head_dim, "d_model / n_head"))
      ->transform(IntRange(lim.min_derived, lim.max_head_dim));
  cmd.add_option("--block-size", *t.block_size,
                 fmt::format("Context length block_size, {} to {}", lim.min_block, lim.max_block) + dflt(*t.block_size))
      ->transform(IntRange(lim.min_block, lim.max_block));
  if (t.vocab_size)
    cmd.add_option("--vocab-size,--vocab", *t.vocab_size,
                   fmt::format("vocab_size, 1 to {} (256: byte-level text)", lim.max_vocab) + dflt(*t.vocab_size))
        ->transform(IntRange(1, lim.max_vocab));
}

}  // namespace kvlab::app

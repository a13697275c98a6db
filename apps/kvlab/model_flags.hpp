// One set of model-shape flag names for the commands that build a model from flags (`kvlab model
// init`, `kvlab train`): each option takes its Hugging Face-style name (n_layer → --n-layer) and
// the short spelling one of the two commands used first (--layers), so that scripts written for
// either keep working.
//
//   --n-layer,--layers   --d-model   --n-head,--heads   --n-kv-head,--kv-heads   --head-dim
//   --block-size         --vocab-size,--vocab (model init only: train's vocabulary is bytes)
#pragma once

namespace CLI {
class App;
}

namespace kvlab::app {

/// The shape fields a command binds; each points at the command's own flag struct member (whose
/// value is the default). vocab_size may be null (the command fixes the vocabulary).
struct ModelShapeTargets {
  int* n_layer;
  int* d_model;
  int* n_head;
  int* n_kv_head;
  int* head_dim;
  int* block_size;
  int* vocab_size = nullptr;
};

/// The ranges each command accepts (they differ: `train` takes 0 for "derive it" in --n-kv-head
/// and --head-dim, `model init` does not).
struct ModelShapeLimits {
  int max_layers = 64;
  int max_dim = 4096;           ///< d_model
  int max_heads = 4096;         ///< n_head and n_kv_head
  int max_head_dim = 4096;
  int min_derived = 1;          ///< lowest --n-kv-head / --head-dim: 0 = "derive from the others"
  int min_block = 1, max_block = 65536;
  int max_vocab = 65536;
};

/// Adds the shape options to `cmd`, both spellings on one option, the HF-style name first (what
/// --help shows first). Every value goes through IntRange: one line naming the option and its
/// range on bad input (exit 2). `help_*` strings describe the command's own default/meaning.
void add_model_shape_options(CLI::App& cmd, const ModelShapeTargets& t, const ModelShapeLimits& lim);

}  // namespace kvlab::app

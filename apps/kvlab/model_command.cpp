#include "model_command.hpp"
#include "model_flags.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <ostream>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/progress.hpp"
#include "core/work_budget.hpp"
#include "io/safe_write.hpp"
#include "io/safetensors.hpp"
#include "model/gpt.hpp"
#include "model/weights_budget.hpp"
#include "model/work.hpp"
#include "report/writers.hpp"
#include "model/weights_io.hpp"
#include "framework/options.hpp"
#include "train/corpus.hpp"
#include "framework/path_option.hpp"

namespace kvlab::app {
namespace {

constexpr int kMaxDim = 4096;       // widths and heads of a model kvlab can init in seconds
constexpr int kMaxLayers = 64;
constexpr int kMaxVocab = 65536;
constexpr int kMaxBlock = 65536;
constexpr std::uintmax_t kMaxTextBytes = 64u << 20;

/// Mean cross-entropy over non-overlapping windows (see run_perplexity).
template <class T>
void perplexity_impl(const MiniGPT<T>& model, const std::vector<int>& tokens, int max_windows, double& loss,
                     std::size_t& predicted, std::size_t& windows, Progress& progress) {
  const ModelConfig& c = model.config();
  const std::size_t L = static_cast<std::size_t>(c.block_size);
  if (tokens.size() < L + 1)
    throw InputError(fmt::format("--text: {} tokens, the model needs at least block_size + 1 = {}", tokens.size(),
                                 L + 1));
  const std::size_t total = (tokens.size() - 1) / L;
  const std::size_t n = max_windows > 0 ? std::min<std::size_t>(total, static_cast<std::size_t>(max_windows)) : total;
  double sum = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t start = i * total / n * L;  // evenly spaced, as the trainer's evaluate
    const std::span<const int> input(tokens.data() + start, L);
    auto cache = model.make_cache(CacheKind::prealloc, static_cast<int>(L));
    const Mat<T> logits = model.forward(input, 0, *cache);
    double window = 0;
    for (std::size_t t = 0; t < L; ++t) {
      const auto row = logits.row(static_cast<Eigen::Index>(t)).template cast<double>();
      const double m = row.maxCoeff();
      const double lse = m + std::log((row.array() - m).exp().sum());
      window += lse - row(tokens[start + t + 1]);
    }
    sum += window;
    progress.update(static_cast<double>(i + 1));
  }
  progress.finish();
  windows = n;
  predicted = n * L;
  loss = sum / static_cast<double>(predicted);
}

std::vector<int> read_bytes_as_tokens(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw InputError(fmt::format("--text: '{}' is not a readable file", printable(path)));
  if (std::filesystem::file_size(path, ec) > kMaxTextBytes)
    throw InputError(fmt::format("--text: '{}' is larger than {} bytes", printable(path), kMaxTextBytes));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("--text: cannot open '{}'", printable(path)));
  std::vector<int> tokens;
  for (std::istreambuf_iterator<char> it(in), end; it != end; ++it) tokens.push_back(static_cast<unsigned char>(*it));
  return tokens;
}

}  // namespace

/// run_perplexity's body; its InputErrors get the option's name.
int perplexity(const PerplexityFlags& f, std::ostream& out);

CLI::App* add_model_command(CLI::App& app, ModelInitFlags& f) {
  using kvlab::checks::FiniteRange;
  using kvlab::checks::IntRange;
  auto* model = app.add_subcommand("model", "Model files: `model init` writes a seeded random mini-GPT (safetensors)");
  model->require_subcommand(1);
  auto* init = model->add_subcommand("init", "Write a seeded random mini-GPT as FILE.safetensors (docs/weights.md)");
  init->footer("Weights as MiniGPT(config, seed) draws them (nanoGPT's init), stored under Hugging Face "
               "GPT-2-like names with the config in the metadata key kvlab.config. Every model check "
               "reads such a file with --weights.");
  init->add_option("--seed", f.seed, "Seed of the weights")->transform(IntRange(0, std::numeric_limits<std::int64_t>::max()));
  init->add_option("--out", f.out, "Output file (FILE.safetensors)")->required();
  add_model_shape_options(*init, {&f.n_layer, &f.d_model, &f.n_head, &f.n_kv_head, &f.head_dim, &f.block_size,
                                  &f.vocab_size},
                          {.max_layers = kMaxLayers, .max_dim = kMaxDim, .max_heads = kMaxDim, .max_head_dim = kMaxDim,
                           .min_derived = 1, .min_block = 1, .max_block = kMaxBlock, .max_vocab = kMaxVocab});
  init->add_option("--positional", f.positional, "learned or rope")->check(CLI::IsMember({"learned", "rope"}));
  init->add_option("--rope-theta", f.rope_theta, "RoPE base")->check(FiniteRange(1.0000001, 1e12));
  init->add_option("--window", f.sliding_window, "Sliding window W (0 = off)")->transform(IntRange(0, kMaxBlock));
  init->add_option("--cla-share", f.cla_share, "Layers sharing one K/V (1 = off)")->transform(IntRange(1, kMaxLayers));
  init->add_option("--store", f.dtype, "Storage dtype: F32 (default), F64, BF16, F16")
      ->check(CLI::IsMember({"F32", "F64", "BF16", "F16"}));
  return init;
}

CLI::App* add_perplexity_command(CLI::App& app, PerplexityFlags& f) {
  auto* p = app.add_subcommand("perplexity", "Validation loss (nats/token) and perplexity of a weights file");
  p->footer("Text: --text FILE as bytes, or the validation split of Debian's fortunes (every 10th fortune; "
            "lib/train/corpus.hpp). Non-overlapping windows of block_size + 1 tokens, each token predicted "
            "once: the trainer's validation loss.");
  p->add_option("--weights", f.weights, "Model file (safetensors, docs/weights.md)")
      ->required()
      ->check(kvlab::checks::PathGiven());
  p->add_option("--text", f.text, "Text file read as bytes (needs vocab_size 256); default: fortunes validation")
      ->check(kvlab::checks::PathGiven());
  p->add_option("--max-windows", f.max_windows, "Evaluate this many evenly spaced windows (0 = all)")
      ->transform(kvlab::checks::IntRange(0, 1'000'000));
  p->add_option("--dtype", f.dtype, "f32 (default) or f64")->check(CLI::IsMember({"f32", "f64"}));
  p->add_option("--format", f.format, "text or json")->check(CLI::IsMember({"text", "json"}));
  return p;
}

int run_model_init(const ModelInitFlags& f, std::ostream& out) {
  ModelConfig c;
  c.n_layer = f.n_layer;
  c.d_model = f.d_model;
  c.n_head = f.n_head;
  c.n_kv_head = f.n_kv_head;
  c.head_dim = f.head_dim;
  c.vocab_size = f.vocab_size;
  c.block_size = f.block_size;
  c.positional = parse_positional(f.positional);
  c.rope_theta = f.rope_theta;
  c.sliding_window = f.sliding_window;
  c.cla_share = f.cla_share;
  c.validate();
  std::uint64_t params = 0;
  for (const auto& t : gpt_tensor_layout(c))
    params = checked_add(params, static_cast<std::uint64_t>(t.numel()), "parameters");
  const std::uint64_t bytes = checked_mul(params, static_cast<std::uint64_t>(safetensors_dtype_size(f.dtype)), "bytes");
  // What `--weights` reads back (lib/io/safetensors.hpp, lib/model/weights_io.hpp): a file kvlab
  // writes is one kvlab reads.
  if (params > kMaxSafetensorsElements)
    throw InputError(fmt::format("--out: the model has {} parameters, more than the budget of {} (2^26) that "
                                 "kvlab reads from a weights file; use a smaller --d-model, --n-layer or --vocab-size",
                                 params, kMaxSafetensorsElements));
  require_weights_budget(c, "model init");
  check_output_target(f.out, "--out");  // before the model is drawn; nothing is created yet
  const MiniGPT<double> model(c, static_cast<std::uint64_t>(f.seed));
  try {  // through a temporary renamed into place (io/safe_write.hpp)
    save_gpt(model, f.out, {{"kvlab.seed", std::to_string(f.seed)}, {"kvlab.made_by", "kvlab model init"}}, f.dtype);
  } catch (const InputError& e) {
    throw InputError(fmt::format("--out: {}", e.what()));
  }
  out << fmt::format("wrote {}: {} parameters in {} ({} bytes of data), seed {}, config {}\n", shown_path(f.out), params,
                     f.dtype, bytes, f.seed, model_config_to_json(c));
  return 0;
}

int run_perplexity(const PerplexityFlags& f, std::ostream& out) {
  try {
    return perplexity(f, out);
  } catch (const InputError& e) {
    const std::string msg = e.what();
    throw InputError(msg.rfind("--", 0) == 0 ? msg : "--weights: " + msg);
  }
}

int perplexity(const PerplexityFlags& f, std::ostream& out) {
  const SafeTensorsFile file = read_safetensors(f.weights);  // read once: config and tensors
  const ModelConfig c = weights_file_config(file, f.weights);
  std::vector<int> tokens;
  std::string text_name;
  if (!f.text.empty()) {
    tokens = read_bytes_as_tokens(f.text);
    text_name = f.text;
  } else {
    std::optional<train::Corpus> corpus;
    try {
      corpus = train::load_fortunes();
    } catch (const InputError& e) {  // an unreadable or oversized fortune file
      throw InputError(fmt::format("--text: not given, and the default text cannot be read: {}", e.what()));
    }
    if (!corpus) {
      out << train::fortunes_skip_line() << "\n";
      return 0;
    }
    tokens = corpus->validation;
    text_name = fmt::format("{} validation split ({} fortunes)", train::kFortunesDir, corpus->n_fortunes_validation);
  }
  if (c.vocab_size != train::kByteVocab)
    throw InputError(fmt::format("--weights: vocab_size = {}; the text is bytes, so perplexity needs a byte-level "
                                 "model (vocab_size 256)", c.vocab_size));
  {
    // The work budget (core/work_budget.hpp), before the weights are read: windows × one forward
    // of block_size tokens (float64: twice the time).
    const double all = tokens.size() > 1 ? static_cast<double>((tokens.size() - 1) / static_cast<std::size_t>(c.block_size)) : 0.0;
    const double per_window = forward_flops(c, c.block_size) * (f.dtype == "f64" ? 2.0 : 1.0);
    auto seconds = [&](std::int64_t max_windows) {
      return model_seconds(per_window * (max_windows == 0 ? all : std::min(all, static_cast<double>(max_windows))));
    };
    if (!within_work_budget(seconds(f.max_windows))) {
      const std::int64_t most = largest_fitting(1, f.max_windows == 0 ? 1'000'000 : f.max_windows,
                                                [&](std::int64_t w) { return within_work_budget(seconds(w)); });
      require_work_budget(seconds(f.max_windows),
                          fmt::format("--max-windows {}{} x the model of --weights ({} layers, d_model {}, block_size {})",
                                      f.max_windows, f.max_windows == 0 ? fmt::format(" (all {:.0f} windows of the text)", all) : "",
                                      c.n_layer, c.d_model, c.block_size),
                          most >= 1 ? fmt::format("at most --max-windows {} with this model", most)
                                    : std::string("a smaller model: one window alone is over it"));
    }
  }
  // On a terminal: how long, up front, then windows per second and the time left.
  const double all_windows =
      tokens.size() > 1 ? static_cast<double>((tokens.size() - 1) / static_cast<std::size_t>(c.block_size)) : 0.0;
  const double n_windows = f.max_windows > 0 ? std::min(all_windows, static_cast<double>(f.max_windows)) : all_windows;
  Progress progress = Progress::on_stderr("perplexity", n_windows, "windows");
  progress.announce(fmt::format(
      "about {} on the reference machine ({:.0f} windows of {} tokens, {})",
      duration_text(model_seconds(n_windows * forward_flops(c, c.block_size) * (f.dtype == "f64" ? 2.0 : 1.0))),
      n_windows, c.block_size, f.dtype));
  double loss = 0;
  std::size_t predicted = 0, windows = 0;
  // The model names its file, so that a forward that overflows is refused naming it (model/gpt.hpp).
  const auto run = [&](auto model) {
    model.set_source(f.weights);
    perplexity_impl(model, tokens, f.max_windows, loss, predicted, windows, progress);
  };
  if (f.dtype == "f64")
    run(gpt_from_tensors<double>(c, file, f.weights));
  else
    run(gpt_from_tensors<float>(c, file, f.weights));
  const double ppl = std::exp(loss);
  if (f.format == "json") {
    nlohmann::json j{{"weights", f.weights}, {"text", text_name}, {"text_tokens", tokens.size()},
                     {"windows", windows}, {"predicted_tokens", predicted}, {"block_size", c.block_size},
                     {"dtype", f.dtype}, {"loss_nats_per_token", loss}, {"bits_per_byte", loss / std::log(2.0)},
                     {"perplexity", ppl}};
    out << json_text(j) << "\n";  // a file name that is not UTF-8 gets U+FFFD, not an exception
    return 0;
  }
  out << fmt::format("weights     {} ({} layers, d_model {}, {} heads / {} K/V heads, block_size {})\n", f.weights,
                     c.n_layer, c.d_model, c.n_head, c.n_kv_head, c.block_size);
  out << fmt::format("text        {}: {} bytes\n", text_name, tokens.size());
  out << fmt::format("windows     {} of {} tokens ({} predicted), {}\n", windows, c.block_size + 1, predicted, f.dtype);
  out << fmt::format("loss        {:.4f} nats/token ({:.4f} bits/byte)\n", loss, loss / std::log(2.0));
  out << fmt::format("perplexity  {:.3f}   (a uniform byte model: 256, loss ln 256 = {:.4f})\n", ppl, std::log(256.0));
  return 0;
}

}  // namespace kvlab::app

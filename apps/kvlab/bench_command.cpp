#include "bench_command.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <ostream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "bench/machine.hpp"
#include "core/build_info.hpp"
#include "core/error.hpp"
#include "model/fast_gpt.hpp"
#include "report/writers.hpp"
#include "support/options.hpp"

namespace kvlab::app {
namespace {

constexpr int kPromptLen = 8;
constexpr const char* kInstall = "Debian/Ubuntu: apt-get install python3-torch (or pip install torch)";

ModelConfig bench_config(const BenchFlags& f, int d) {
  ModelConfig c;
  c.n_layer = f.layers;
  c.d_model = d;
  c.head_dim = 64;
  c.n_head = d / 64;
  c.n_kv_head = c.n_head;
  c.vocab_size = 4096;
  c.block_size = f.ctx + f.steps + 1;
  return c;
}

// The raw float32 layout of bench/torch_decode.py's docstring.
void write_raw_weights(const MiniGPT<float>& m, const std::string& path) {
  std::ofstream out(path, std::ios::binary);
  auto put = [&](const auto& a) { out.write(reinterpret_cast<const char*>(a.data()), static_cast<std::streamsize>(a.size() * sizeof(float))); };
  const auto& w = m.weights();
  put(w.wte), put(w.wpe);
  for (const auto& b : w.blocks) {
    put(b.ln1_gain), put(b.ln1_bias), put(b.w_q), put(b.b_q), put(b.w_k), put(b.b_k), put(b.w_v), put(b.b_v);
    put(b.w_o), put(b.b_o), put(b.ln2_gain), put(b.ln2_bias), put(b.w_fc), put(b.b_fc), put(b.w_proj), put(b.b_proj);
  }
  put(w.lnf_gain), put(w.lnf_bias), put(w.w_lm);
  if (!out) throw InputError("bench: cannot write " + path);
}

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char ch : s) q += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return q + "'";
}

std::string run_capture(const std::string& cmd, int& status) {
  std::string text;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) {
    status = -1;
    return text;
  }
  char buf[4096];
  while (std::fgets(buf, sizeof buf, p)) text += buf;
  status = pclose(p);
  return text;
}

std::string spread_text(const std::vector<double>& v) {
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  return fmt::format("{:.4g}–{:.4g}", *lo, *hi);
}

}  // namespace

CLI::App* add_bench_command(CLI::App& app, BenchFlags& f) {
  auto* sub = app.add_subcommand("bench", "Benchmarks of kvlab's fast f32 path: `bench decode [--vs-torch]`");
  sub->footer(
      "bench decode: tokens/s of decode steps (fast float32 path, model/fast_gpt.hpp) for each d_model "
      "(4 layers, head_dim 64, MHA, vocab 4096) and batch, with --ctx positions cached; each figure the "
      "median of --repeats timed runs of --steps steps, with the range. --vs-torch runs the same config "
      "and weights in PyTorch (bench/torch_decode.py, preallocated KV cache, same thread count) in the "
      "same run and prints the ratio. Without PyTorch, --vs-torch exits 2.");
  sub->add_option("what", f.what, "The benchmark: decode")->required()->check(CLI::IsMember({"decode"}));
  sub->add_option("--d-model", f.d_models, "Model widths, multiples of 64 in [64, 4096] (default 256 512 1024 2048)")
      ->check(kvlab::checks::IntRange(64, 4096));
  sub->add_option("--batch", f.batches, "Batch sizes, 1 to 64 (default 1 8)")->check(kvlab::checks::IntRange(1, 64));
  sub->add_option("--layers", f.layers, "Layers, 1 to 32 (default 4)")->check(kvlab::checks::IntRange(1, 32));
  sub->add_option("--ctx", f.ctx, "Cached positions before the timed steps, 1 to 8192 (default 128)")
      ->check(kvlab::checks::IntRange(1, 8192));
  sub->add_option("--steps", f.steps, "Decode steps per timed run, 1 to 1000 (default 16)")
      ->check(kvlab::checks::IntRange(1, 1000));
  sub->add_option("--repeats", f.repeats, "Timed runs per configuration, 1 to 100 (default 3)")
      ->check(kvlab::checks::IntRange(1, 100));
  sub->add_flag("--vs-torch", f.vs_torch, "Also run the same model in PyTorch, side by side");
  sub->add_option("--python", f.python,
                  "Python interpreter for --vs-torch (default python3, else /usr/bin/python3 if only it has torch)");
  sub->add_option("--script", f.script, "The PyTorch driver (default bench/torch_decode.py of the source tree)");
  sub->add_option("--format", f.format, "text (default), md or json")->check(CLI::IsMember({"text", "md", "json"}));
  return sub;
}

int run_bench(const BenchFlags& f, std::ostream& out) {
  for (int d : f.d_models)
    if (d % 64 != 0) throw InputError(fmt::format("--d-model: must be a multiple of 64 (head_dim 64) (got {})", d));
  const std::string script =
      f.script.empty() ? (std::filesystem::path(data_dir()).parent_path() / "bench" / "torch_decode.py").string() : f.script;
  std::string python = f.python;
  if (f.vs_torch) {
    if (f.python.empty() || f.python.find_first_of("'\"\n") != std::string::npos)
      throw InputError("--python: give an interpreter path without quotes or newlines");
    int status = 0;
    auto has_torch = [&](const std::string& interp) {
      run_capture(shell_quote(interp) + " -c 'import torch' >/dev/null 2>&1", status);
      return status == 0;
    };
    // The default python3 may be a pyenv or venv one; Debian's python3-torch is for /usr/bin/python3.
    if (!has_torch(python) && f.python == "python3" && has_torch("/usr/bin/python3")) python = "/usr/bin/python3";
    if (status != 0) {
      std::cerr << "kvlab: bench --vs-torch: PyTorch cannot be imported by " << f.python << " (" << kInstall << ")\n";
      return 2;
    }
    if (!std::filesystem::exists(script)) throw InputError("--script: " + script + " does not exist");
  }
  const int batch_max = *std::max_element(f.batches.begin(), f.batches.end());
  double load[1] = {-1};
  getloadavg(load, 1);
  Table t{fmt::format("decode tokens/s, {} layers, ctx {}, {} steps x {} repeats, {} threads", f.layers, f.ctx,
                      f.steps, f.repeats, fast_threads()),
          {"d_model", "weights MiB", "batch", "kvlab tok/s", "kvlab range", "GB/s"}, {}};
  if (f.vs_torch) {
    t.columns.insert(t.columns.end(), {"torch tok/s", "torch range", "kvlab / torch", "max |Δlogit|"});
  }
  nlohmann::json rows = nlohmann::json::array();
  const std::string tmp = (std::filesystem::temp_directory_path() / fmt::format("kvlab-bench-{}", getpid())).string();
  for (int d : f.d_models) {
    const ModelConfig c = bench_config(f, d);
    std::vector<float> prompt_logits(static_cast<std::size_t>(kPromptLen) * c.vocab_size), last(c.vocab_size);
    std::vector<std::vector<double>> kv_rates;
    {
      const MiniGPT<float> model(c, 1234);
      FastGpt fast(model, batch_max, c.block_size, kPromptLen);
      std::vector<int> prompt(kPromptLen);
      for (int i = 0; i < kPromptLen; ++i) prompt[i] = i + 1;
      fast.prefill(prompt, last, prompt_logits);
      if (f.vs_torch) {
        write_raw_weights(model, tmp + ".weights");
        std::ofstream lo(tmp + ".logits", std::ios::binary);
        lo.write(reinterpret_cast<const char*>(prompt_logits.data()), static_cast<std::streamsize>(prompt_logits.size() * 4));
      }
      fast.fill_cache(7);
      std::vector<float> logits(static_cast<std::size_t>(batch_max) * c.vocab_size);
      for (int B : f.batches) {
        std::vector<int> tok(B, 3);
        fast.set_length(f.ctx);
        fast.decode(tok, logits);  // warm-up
        std::vector<double> rates;
        for (int r = 0; r < f.repeats; ++r) {
          fast.set_length(f.ctx);
          const double t0 = steady_seconds();
          for (int s = 0; s < f.steps; ++s) {
            fast.decode(tok, logits);
            for (int b = 0; b < B; ++b) {  // greedy next token, as the PyTorch driver does
              const float* row = logits.data() + static_cast<std::size_t>(b) * c.vocab_size;
              tok[b] = static_cast<int>(std::max_element(row, row + c.vocab_size) - row);
            }
          }
          rates.push_back(B * f.steps / (steady_seconds() - t0));
        }
        kv_rates.push_back(rates);
      }
    }
    nlohmann::json torch_rows;
    if (f.vs_torch) {
      nlohmann::json cj{{"n_layer", c.n_layer}, {"d_model", c.d_model}, {"n_head", c.n_head}, {"n_kv_head", c.n_kv_head},
                        {"head_dim", c.head_dim}, {"vocab_size", c.vocab_size}, {"block_size", c.block_size}};
      std::string batches;
      for (int B : f.batches) batches += (batches.empty() ? "" : ",") + std::to_string(B);
      const std::string cmd = fmt::format(
          "{} {} --config {} --weights {} --logits {} --prompt-len {} --batches {} --ctx {} --steps {} --repeats {} "
          "--threads {}",
          shell_quote(python), shell_quote(script), shell_quote(cj.dump()), shell_quote(tmp + ".weights"),
          shell_quote(tmp + ".logits"), kPromptLen, batches, f.ctx, f.steps, f.repeats, fast_threads());
      int status = 0;
      const std::string text = run_capture(cmd, status);
      std::filesystem::remove(tmp + ".weights");
      std::filesystem::remove(tmp + ".logits");
      if (status != 0) throw std::runtime_error("bench: the PyTorch driver failed: " + cmd);
      torch_rows = nlohmann::json::array();
      std::size_t pos = 0;
      while (pos < text.size()) {
        const std::size_t end = text.find('\n', pos);
        const std::string line = text.substr(pos, end - pos);
        if (!line.empty() && line[0] == '{') torch_rows.push_back(nlohmann::json::parse(line));
        pos = end == std::string::npos ? text.size() : end + 1;
      }
    }
    const double weight_mib = 4.0 * static_cast<double>(streamed_parameters(c)) / 1048576.0;
    for (std::size_t i = 0; i < f.batches.size(); ++i) {
      const int B = f.batches[i];
      const double kv = median(kv_rates[i]);
      const StepCost cost = decode_step_cost(c, B, f.ctx + f.steps / 2);
      std::vector<Cell> row{static_cast<std::int64_t>(d), weight_mib, static_cast<std::int64_t>(B), kv,
                            spread_text(kv_rates[i]), cost.bytes * kv / B / 1e9};
      nlohmann::json jr{{"d_model", d}, {"batch", B}, {"kvlab_tok_s", kv_rates[i]}, {"kvlab_median", kv}};
      if (f.vs_torch) {
        const nlohmann::json* tr = nullptr;
        for (const auto& x : torch_rows)
          if (x.at("batch").get<int>() == B) tr = &x;
        if (!tr) throw std::runtime_error("bench: the PyTorch driver printed no row for batch " + std::to_string(B));
        const std::vector<double> tr_rates = tr->at("tok_s").get<std::vector<double>>();
        const double tm = median(tr_rates);
        const double diff = tr->at("max_abs_logit_diff").get<double>();
        row.insert(row.end(), {tm, spread_text(tr_rates), kv / tm, diff});
        jr["torch_tok_s"] = tr_rates;
        jr["torch_median"] = tm;
        jr["ratio"] = kv / tm;
        jr["max_abs_logit_diff"] = diff;
        jr["torch_version"] = tr->at("torch");
      }
      t.rows.push_back(std::move(row));
      rows.push_back(jr);
    }
  }
  if (f.format == "json") {
    out << nlohmann::json{{"load_average_1min", load[0]}, {"threads", fast_threads()}, {"rows", rows}}.dump(2) << '\n';
  } else {
    write_table(out, t, parse_format(f.format));
    out << fmt::format("load average {:.2f} at the start; GB/s = the step's bytes (weights + KV, "
                       "decode_step_cost) x steps/s\n", load[0]);
  }
  return 0;
}

}  // namespace kvlab::app

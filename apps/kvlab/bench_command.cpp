#include "bench_command.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
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

#include "device/cuda_entry.hpp"
#include "device/device.hpp"
#include "bench/machine.hpp"
#include "io/data_dir.hpp"
#include "core/error.hpp"
#include "core/progress.hpp"
#include "core/work_budget.hpp"
#include "io/safe_write.hpp"
#include "model/fast_gpt.hpp"
#include "report/writers.hpp"
#include "framework/options.hpp"

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
  std::string out;
  auto put = [&](const auto& a) { out.append(reinterpret_cast<const char*>(a.data()), a.size() * sizeof(float)); };
  const auto& w = m.weights();
  put(w.wte), put(w.wpe);
  for (const auto& b : w.blocks) {
    put(b.ln1_gain), put(b.ln1_bias), put(b.w_q), put(b.b_q), put(b.w_k), put(b.b_k), put(b.w_v), put(b.b_v);
    put(b.w_o), put(b.b_o), put(b.ln2_gain), put(b.ln2_bias), put(b.w_fc), put(b.b_fc), put(b.w_proj), put(b.b_proj);
  }
  put(w.lnf_gain), put(w.lnf_bias), put(w.w_lm);
  safe_write_file(path, out, "bench --vs-torch");
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

/// The work of `bench decode` on the reference machine (core/work_budget.hpp): for each d_model,
/// drawing the model and filling the cache, then (repeats x steps + 1) decode steps per batch at
/// the rates of the reference machine (decode_step_cost's bytes and FLOPs), twice with --vs-torch;
/// seconds with the margin. Memory: the model twice (reference and fast copies) and the cache of
/// the largest batch.
struct DecodeWork {
  double seconds = 0.0, peak_bytes = 0.0;
};
DecodeWork decode_work(const BenchFlags& f, int batch_max) {
  DecodeWork w;
  for (int d : f.d_models) {
    const ModelConfig c = bench_config(f, d);
    const double params = static_cast<double>(streamed_parameters(c)) + (c.vocab_size + c.block_size) * d;
    const double cache = 2.0 * c.n_layer * c.kv_width() * static_cast<double>(batch_max) * c.block_size;
    w.peak_bytes = std::max(w.peak_bytes, 4.0 * (2.0 * params + cache));
    double s = (params + cache) / kRefRandomFloatsPerSecond;
    for (int B : f.batches) {
      const StepCost step = decode_step_cost(c, B, f.ctx + f.steps);
      s += (static_cast<double>(f.repeats) * f.steps + 1.0) *
           (step.bytes / kRefStreamBytesPerSecond + step.flops / kRefGemmFlopsPerSecond);
    }
    w.seconds += (f.vs_torch ? 2.0 : 1.0) * s;
  }
  w.seconds *= kBudgetMargin;
  return w;
}

/// Throws InputError naming the options when decode_work is over the memory or work budget.
void require_decode_budget(const BenchFlags& f, int batch_max) {
  const DecodeWork w = decode_work(f, batch_max);
  const int d_max = *std::max_element(f.d_models.begin(), f.d_models.end());
  const std::string flags = fmt::format("--d-model {}{} x --batch {} x --layers {} x --ctx {} x --steps {} x --repeats {}",
                                        d_max, f.d_models.size() > 1 ? " (and the others)" : "", batch_max, f.layers,
                                        f.ctx, f.steps, f.repeats);
  require_memory_budget(w.peak_bytes, flags, "a smaller --d-model, --layers, --batch or --ctx");
  if (within_work_budget(w.seconds)) return;
  const auto most = largest_fitting(1, f.repeats, [&](std::int64_t r) {
    BenchFlags t = f;
    t.repeats = static_cast<int>(r);
    return within_work_budget(decode_work(t, batch_max).seconds);
  });
  require_work_budget(w.seconds, flags,
                      most >= 1 ? fmt::format("at most --repeats {} with these sizes", most)
                                : std::string("fewer or smaller --d-model, --batch, --steps or --ctx"));
}

}  // namespace

CLI::App* add_bench_command(CLI::App& app, BenchFlags& f) {
  auto* sub = app.add_subcommand(
      "bench", "Benchmarks: `bench decode [--vs-torch]` (fast f32 CPU path), `bench kernels` (CUDA kernels)");
  sub->footer(
      "bench decode: tokens/s of decode steps (fast float32 path, model/fast_gpt.hpp) for each d_model "
      "(4 layers, head_dim 64, MHA, vocab 4096) and batch, with --ctx positions cached; each figure the "
      "median of --repeats timed runs of --steps steps, with the range. --vs-torch runs the same config "
      "and weights in PyTorch (bench/torch_decode.py, preallocated KV cache, same thread count) in the "
      "same run and prints the ratio. Without PyTorch, --vs-torch exits 2.\n"
      "bench kernels: the CUDA decode-attention kernel (contiguous and paged) for every --batch x --kv-ctx x "
      "--heads, median of --repeats CUDA-event timings after warm-up over rotating buffers larger than L2: "
      "GB/s = (K/V + q + out bytes) / time, and its ratio to a device-to-device copy of --copy-mib measured "
      "in the same run; cuBLAS SGEMM FLOP/s for the MLP shapes (--gemm-m x --gemm-d x 4 --gemm-d). Without "
      "a GPU: 'skipped', exit 0.");
  sub->add_option("what", f.what, "The benchmark: decode or kernels")->required()->check(CLI::IsMember({"decode", "kernels"}));
  sub->add_option("--d-model", f.d_models, "Model widths, multiples of 64 in [64, 4096] (default 256 512 1024 2048)")
      ->transform(kvlab::checks::IntRange(64, 4096));
  sub->add_option("--batch", f.batches, "Batch sizes, 1 to 64 (default 1 8)")->transform(kvlab::checks::IntRange(1, 64));
  sub->add_option("--layers", f.layers, "Layers, 1 to 32 (default 4)")->transform(kvlab::checks::IntRange(1, 32));
  sub->add_option("--ctx", f.ctx, "Cached positions before the timed steps, 1 to 8192 (default 128)")
      ->transform(kvlab::checks::IntRange(1, 8192));
  sub->add_option("--steps", f.steps, "Decode steps per timed run, 1 to 1000 (default 16)")
      ->transform(kvlab::checks::IntRange(1, 1000));
  sub->add_option("--repeats", f.repeats, "Timed runs per configuration, 1 to 100 (default 3; kernels: 20)")
      ->transform(kvlab::checks::IntRange(1, 100))
      ->each([&f](const std::string&) { f.repeats_given = true; });
  sub->add_flag("--vs-torch", f.vs_torch, "Also run the same model in PyTorch, side by side");
  sub->add_option("--python", f.python,
                  "Python interpreter for --vs-torch (default python3, else /usr/bin/python3 if only it has torch)");
  sub->add_option("--script", f.script, "The PyTorch driver (default bench/torch_decode.py of the source tree)");
  sub->add_option("--format", f.format, "text (default), md or json")->check(CLI::IsMember({"text", "md", "json"}));
  sub->add_option("--kv-ctx", f.kv_ctx, "kernels: cached positions per sequence, 1 to 1048576 (default 4096 32768 131072)")
      ->transform(kvlab::checks::IntRange(1, 1048576));
  sub->add_option("--heads", f.heads, "kernels: query/KV head pairs as H/KV, e.g. 32/8 (default 32/8 32/32)");
  sub->add_option("--head-dim", f.head_dim, "kernels: head_dim, 1 to 256 (default 128)")
      ->transform(kvlab::checks::IntRange(1, 256));
  sub->add_option("--block-size", f.block_size, "kernels: paged block size in positions, 1 to 1024 (default 16)")
      ->transform(kvlab::checks::IntRange(1, 1024));
  sub->add_option("--cache", f.cache, "kernels: cache storage, f32 (default) or bf16")
      ->check(CLI::IsMember({"f32", "bf16"}));
  sub->add_option("--gemm-m", f.gemm_m, "kernels: SGEMM rows (tokens), 1 to 65536 (default 8 512 4096)")
      ->transform(kvlab::checks::IntRange(1, 65536));
  sub->add_option("--gemm-d", f.gemm_d, "kernels: d_model of the SGEMM shapes, 64 to 16384 (default 4096)")
      ->transform(kvlab::checks::IntRange(64, 16384));
  sub->add_option("--copy-mib", f.copy_mib, "kernels: device-to-device copy size in MiB, 64 to 16384 (default 2048)")
      ->transform(kvlab::checks::IntRange(64, 16384));
  return sub;
}

int run_bench(const BenchFlags& f, std::ostream& out) {
  if (f.what == "kernels") return run_bench_kernels(f, out);
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
  require_decode_budget(f, batch_max);
  // On a terminal: about how long, up front, then timed runs per second and the time left (the
  // PyTorch side, with --vs-torch, counted as as many runs again).
  const double runs_per_d = static_cast<double>(f.batches.size()) * f.repeats;
  Progress progress = Progress::on_stderr(
      "bench", static_cast<double>(f.d_models.size()) * runs_per_d * (f.vs_torch ? 2.0 : 1.0), "timed runs");
  progress.announce(fmt::format("about {} on the reference machine ({} d_model x {} batch sizes x {} timed runs{})",
                                duration_text(decode_work(f, batch_max).seconds), f.d_models.size(),
                                f.batches.size(), f.repeats, f.vs_torch ? ", then the same in PyTorch" : ""));
  double runs_done = 0;
  const double load = load_average_1min();
  Table t{fmt::format("decode tokens/s, {} layers, ctx {}, {} steps x {} repeats, {} threads", f.layers, f.ctx,
                      f.steps, f.repeats, fast_threads()),
          {"d_model", "weights MiB", "batch", "kvlab tok/s", "kvlab range", "GB/s"}, {}};
  if (f.vs_torch) {
    t.columns.insert(t.columns.end(), {"torch tok/s", "torch range", "kvlab / torch", "max |Δlogit|"});
  }
  nlohmann::json rows = nlohmann::json::array();
  // The weights and logits for the PyTorch driver, in a private directory (mkdtemp, not a name in
  // /tmp that another user could have placed a link at), removed at the end.
  struct PrivateDir {
    std::string path;
    ~PrivateDir() {
      std::error_code ec;
      if (!path.empty()) std::filesystem::remove_all(path, ec);
    }
  } work;
  if (f.vs_torch) {
    std::string pattern = (std::filesystem::temp_directory_path() / "kvlab-bench-XXXXXX").string();
    if (!::mkdtemp(pattern.data()))
      throw InputError(fmt::format("bench --vs-torch: cannot create a temporary directory: {}", std::strerror(errno)));
    work.path = pattern;
  }
  const std::string tmp = work.path + "/run";
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
        safe_write_file(tmp + ".logits", std::string_view(reinterpret_cast<const char*>(prompt_logits.data()),
                                                          prompt_logits.size() * sizeof(float)), "bench --vs-torch");
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
          progress.update(++runs_done, fmt::format("d_model {}, batch {}", d, B));
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
      runs_done += runs_per_d;
      progress.update(runs_done, fmt::format("d_model {}, PyTorch", d));
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
  progress.finish();
  if (f.format == "json") {
    out << nlohmann::json{{"load_average_1min", load}, {"threads", fast_threads()}, {"rows", rows}}.dump(2) << '\n';
  } else {
    write_table(out, t, parse_format(f.format));
    out << fmt::format("load average {:.2f} at the start; GB/s = the step's bytes (weights + KV, "
                       "decode_step_cost) x steps/s\n", load);
  }
  return 0;
}

namespace {

struct HeadPair {
  int n_head = 0, n_kv_head = 0;
};

/// "32/8" -> {32, 8}; InputError naming --heads unless 1 <= KV <= H <= 256, KV divides H and the
/// group fits the kernel's shared memory ((H / KV) x head_dim <= 8192).
HeadPair parse_heads(const std::string& s, int head_dim) {
  const auto slash = s.find('/');
  auto digits = [](const std::string& t) { return !t.empty() && t.size() <= 4 && t.find_first_not_of("0123456789") == std::string::npos; };
  if (slash == std::string::npos || !digits(s.substr(0, slash)) || !digits(s.substr(slash + 1)))
    throw InputError("--heads: want H/KV with 1 <= KV <= H <= 256, e.g. 32/8 (got '" + printable(s, 40) + "')");
  const int h = std::stoi(s.substr(0, slash)), kv = std::stoi(s.substr(slash + 1));
  if (h < 1 || h > 256 || kv < 1 || kv > h || h % kv != 0)
    throw InputError(fmt::format("--heads: want H/KV with 1 <= KV <= H <= 256 and KV dividing H (got {})", printable(s, 40)));
  if (h / kv > 128) throw InputError(fmt::format("--heads: H / KV must be at most 128 (got {})", printable(s, 40)));
  if (h / kv * head_dim > 8192)
    throw InputError(fmt::format("--heads: (H / KV) x --head-dim must be at most 8192 (got {} x {})", h / kv, head_dim));
  return {h, kv};
}

}  // namespace

int run_bench_kernels(const BenchFlags& f, std::ostream& out) {
  std::vector<HeadPair> heads;
  for (const auto& s : f.heads) heads.push_back(parse_heads(s, f.head_dim));
  std::string why;
  const std::string skipped = !cuda_compiled()                 ? "built without CUDA"
                              : cuda_devices(&why).empty()     ? "no CUDA device (" + why + ")"
                                                               : "";
  if (!skipped.empty()) {
    if (f.format == "json")
      out << nlohmann::json{{"command", "bench kernels"}, {"skipped", skipped}}.dump(2) << '\n';
    else
      out << "skipped: " << skipped << '\n';
    return 0;
  }
  const int repeats = f.repeats_given ? f.repeats : 20, warmup = 3;
  const kernels::Storage storage = f.cache == "bf16" ? kernels::Storage::bf16 : kernels::Storage::f32;
  const double elem = storage == kernels::Storage::f32 ? 4.0 : 2.0;
  try {
    const kernels::DeviceFacts dev = gpu::device_facts();
    // The copy: read + write bytes (STREAM's convention) over its median time.
    const std::size_t copy_bytes = static_cast<std::size_t>(f.copy_mib) << 20;
    const kernels::KernelTiming copy = gpu::bench_copy(copy_bytes, warmup, repeats);
    const double copy_gbs = 2.0 * static_cast<double>(copy_bytes) / (median(copy.ms) * 1e-3) / 1e9;

    Table t{fmt::format("decode attention on {} (L2 {} MiB), {} cache, head_dim {}, median of {} after {} warm-up; "
                        "copy {:.0f} GB/s",
                        dev.name, dev.l2_bytes >> 20, f.cache, f.head_dim, repeats, warmup, copy_gbs),
            {"kernel", "batch", "ctx", "H/KV", "MiB moved", "median us", "range us", "GB/s", "vs copy",
             "roofline us", "paged/contig", "buffers"}, {}};
    nlohmann::json jrows = nlohmann::json::array();
    for (int B : f.batches)
      for (int ctx : f.kv_ctx)
        for (const HeadPair& hp : heads) {
          double contiguous_us = 0;
          for (bool paged : {false, true}) {
            kernels::AttentionBenchConfig c;
            c.batch = B, c.ctx = ctx, c.n_head = hp.n_head, c.n_kv_head = hp.n_kv_head, c.head_dim = f.head_dim;
            c.paged = paged, c.block_size = f.block_size, c.storage = storage, c.warmup = warmup, c.repeats = repeats;
            const kernels::KernelTiming tm = gpu::bench_decode_attention(c);
            // Bytes the launch must move: every cached K and V element once, q and out once
            // (float32), and the block table (paged).
            const double kv = 2.0 * B * static_cast<double>(ctx) * hp.n_kv_head * f.head_dim * elem;
            const double qo = 2.0 * B * hp.n_head * f.head_dim * 4.0;
            const double table = paged ? 4.0 * B * ((ctx + f.block_size - 1) / f.block_size) : 0.0;
            const double bytes = kv + qo + table;
            const double med_us = median(tm.ms) * 1e3;
            const auto [lo, hi] = std::minmax_element(tm.ms.begin(), tm.ms.end());
            const double gbs = bytes / (med_us * 1e-6) / 1e9;
            const double roof_us = bytes / (copy_gbs * 1e9) * 1e6;
            if (!paged) contiguous_us = med_us;
            const std::string heads_text = fmt::format("{}/{}", hp.n_head, hp.n_kv_head);
            t.rows.push_back({std::string(paged ? fmt::format("paged bs={}", f.block_size) : "contiguous"),
                              static_cast<std::int64_t>(B), static_cast<std::int64_t>(ctx), heads_text, bytes / 1048576.0,
                              med_us, fmt::format("{:.4g}–{:.4g}", *lo * 1e3, *hi * 1e3), gbs, gbs / copy_gbs, roof_us,
                              paged ? Cell{med_us / contiguous_us} : Cell{std::string("")},
                              static_cast<std::int64_t>(tm.buffers)});
            jrows.push_back({{"kernel", paged ? "paged" : "contiguous"}, {"batch", B}, {"ctx", ctx},
                             {"n_head", hp.n_head}, {"n_kv_head", hp.n_kv_head}, {"head_dim", f.head_dim},
                             {"block_size", paged ? f.block_size : 0}, {"cache", f.cache}, {"bytes", bytes},
                             {"ms", tm.ms}, {"median_us", med_us}, {"gb_per_s", gbs}, {"fraction_of_copy", gbs / copy_gbs},
                             {"roofline_us", roof_us}, {"buffers", tm.buffers},
                             {"paged_over_contiguous", paged ? med_us / contiguous_us : 1.0}});
          }
        }
    // cuBLAS SGEMM for the MLP's two products: [m, d] x [d, 4d] and [m, 4d] x [4d, d].
    Table g{fmt::format("cuBLAS SGEMM (FP32, no TF32), MLP shapes of d_model {}", f.gemm_d),
            {"m", "n", "k", "median us", "TFLOP/s"}, {}};
    nlohmann::json jgemm = nlohmann::json::array();
    std::string gemm_error;  // e.g. no libcublas on this machine: the attention figures still print
    for (int m : f.gemm_m)
      for (const auto& [n, k] : {std::pair{4 * f.gemm_d, f.gemm_d}, std::pair{f.gemm_d, 4 * f.gemm_d}}) {
        if (!gemm_error.empty()) break;
        kernels::KernelTiming tm;
        try {
          tm = gpu::bench_sgemm(m, n, k, warmup, repeats);
        } catch (const kernels::CudaError& e) {
          gemm_error = e.what();
          break;
        }
        const double us = median(tm.ms) * 1e3;
        const double tflops = 2.0 * m * static_cast<double>(n) * k / (us * 1e-6) / 1e12;
        g.rows.push_back({static_cast<std::int64_t>(m), static_cast<std::int64_t>(n), static_cast<std::int64_t>(k), us, tflops});
        jgemm.push_back({{"m", m}, {"n", n}, {"k", k}, {"ms", tm.ms}, {"median_us", us}, {"tflop_per_s", tflops}});
      }
    if (f.format == "json") {
      out << nlohmann::json{{"device", dev.name}, {"l2_bytes", dev.l2_bytes}, {"repeats", repeats}, {"warmup", warmup},
                            {"copy", {{"bytes", copy_bytes}, {"ms", copy.ms}, {"gb_per_s", copy_gbs}}},
                            {"attention", jrows}, {"sgemm", jgemm}, {"sgemm_error", gemm_error}}
                 .dump(2)
          << '\n';
    } else {
      write_table(out, t, parse_format(f.format));
      out << '\n';
      write_table(out, g, parse_format(f.format));
      if (!gemm_error.empty()) out << "SGEMM not measured: " << gemm_error << '\n';
      out << fmt::format("copy: cudaMemcpyAsync device-to-device of {} MiB, (read + write) / median time = {:.1f} GB/s; "
                         "roofline us = MiB moved / copy rate. Goals (docs/gpu.md): >= 0.80 of copy at >= 1 GiB moved; "
                         "paged/contig <= 1.10 at block size 16.\n",
                         f.copy_mib, copy_gbs);
    }
  } catch (const kernels::CudaError& e) {
    std::cerr << "kvlab: bench kernels: CUDA error: " << e.what() << '\n';
    return 2;
  }
  return 0;
}

}  // namespace kvlab::app

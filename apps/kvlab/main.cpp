// kvlab: one subcommand per course claim, plus `list`, `all` and `info`.
//
//   kvlab list                     the checks, their sources and one-line summaries
//   kvlab all [--format json]      every check with its defaults; ends "N passed, M failed"
//                                  (--bench also runs the benchmarks, e.g. cpu-roofline)
//   kvlab machine [--save]         this machine's bandwidth and GEMM rate (hardware entry "local")
//   kvlab bench decode [--vs-torch] tokens/s of the fast f32 decode (and PyTorch's)
//   kvlab bench kernels            CUDA decode attention GB/s vs a device copy, SGEMM (skips without GPU)
//   kvlab parity                   CUDA kernels vs their float64 references (skips without GPU)
//   kvlab info                     version, build type, CUDA, library versions
//   kvlab explain <check>          the derivation behind a check's claim, with its source
//   kvlab quiz [--answers]         the course's estimation drills, asked or as a worksheet
//   kvlab selftest [--answers]     the course's whole self-test, scored per layer and exit criterion
//   kvlab cheatsheet [TABLE...]    the course's numeric tables, computed by the library
//   kvlab plan --model M --gpu G --ctx N [--batch B] [--tp T]   does it fit, max batch, bounds
//   kvlab train --out F            train a byte-level mini-GPT on the fortunes text
//   kvlab model init --out F       a seeded random mini-GPT as safetensors (docs/weights.md)
//   kvlab perplexity --weights F   validation loss and perplexity of a weights file
//   kvlab <check> [options]        one check; `kvlab <check> --help` explains it
//
// Exit status: 0 every claim held, 1 a claim did not hold, 2 bad usage or input (or a failed CUDA
// call), 3 internal error.
#include <algorithm>
#include <cstdint>
#include <deque>
#include <fstream>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "io/safe_write.hpp"
#include "kernels/gpu_kernels.hpp"
#include "report/plot.hpp"
#include "report/writers.hpp"
#include "build_info.hpp"
#include "cheatsheet_command.hpp"
#include "errata_command.hpp"
#include "bench_command.hpp"
#include "machine_command.hpp"
#include "model_command.hpp"
#include "parity_command.hpp"
#include "plan_command.hpp"
#include "quiz_command.hpp"
#include "selftest_command.hpp"
#include "train_command.hpp"
#include "framework/check.hpp"
#include "framework/options.hpp"
#include "framework/path_option.hpp"
#include "report/lang.hpp"

namespace {

using kvlab::checks::Check;

constexpr int kExitFail = 1;
constexpr int kExitUsage = 2;
constexpr int kExitInternal = 3;

/// The options every check subcommand (and `all`) takes, as typed.
struct CommonFlags {
  std::string format = "text";
  std::int64_t seed = 1234;  // signed so that "-1" is rejected, not wrapped
  std::string dtype = "f64";
  std::string device = "auto";
  bool dtype_given = false;  ///< --dtype was on the command line (of this check, or of `all`)
  std::string plot;          ///< --plot value; only on checks with has_plot()
  bool plot_given = false;   ///< --plot was on the command line ('' is refused, not "no plot")
  std::string weights;       ///< --weights FILE ("" = seeded random model); only with uses_weights()
  std::string draft_weights; ///< --draft-weights FILE (the draft); only with uses_draft_weights()
  std::optional<std::string> lang;  ///< --lang en|zh (unset: KVLAB_LANG, else en)
};

/// What only `kvlab all` takes.
struct AllFlags {
  bool bench = false;  ///< also run the benchmarks
  bool full = false;   ///< every complete report instead of one line per check
  bool quiet = false;  ///< only the checks that did not hold
  std::vector<std::string> only;  ///< run only these checks ("" = all)
};

/// Why `check` refuses --dtype: the --help line and the refusal say the same.
std::string no_dtype_reason(const Check& check) {
  return check.name() + " offers no choice of model dtype (no model, or one at a fixed precision)";
}

/// The flags every check (and `kvlab all`) takes. With `check`, the help of --dtype and --device
/// says where that check does not use them, as resolve() will refuse them.
void add_common_flags(CLI::App& sub, CommonFlags& f, const Check* check = nullptr) {
  sub.add_option("--format", f.format, "Output: text (default), md, csv (tables only) or json")
      ->check(CLI::IsMember({"text", "md", "csv", "json"}));
  sub.add_option("--lang", f.lang,
                 "Language of the headline, verdicts and column names: en or zh (default: KVLAB_LANG, else en)")
      ->check(CLI::IsMember({"en", "zh"}));
  sub.add_option("--seed", f.seed, "Seed of every random draw (same seed, same output)")
      ->transform(kvlab::checks::IntRange(0, std::numeric_limits<std::int64_t>::max()));
  const bool dtype = !check || check->uses_dtype(), device = !check || check->has_cuda();
  sub.add_option("--dtype", f.dtype,
                 dtype ? "Model arithmetic: f64 (default, as the course) or f32"
                       : "Not taken: " + no_dtype_reason(*check))
      ->check(CLI::IsMember({"f64", "f32"}));
  sub.add_option("--device", f.device,
                 device ? "cpu, cuda or auto (default: the GPU when built in, present and the check's device path "
                          "covers the run; float32 there)"
                        : "auto (default) or cpu, both the CPU: " + check->name() + " has no CUDA implementation (cuda is refused)")
      ->check(CLI::IsMember({"cpu", "cuda", "auto"}));
}

kvlab::checks::RunContext resolve(const CommonFlags& f, const Check& check) {
  if (f.dtype_given && !check.uses_dtype())
    throw kvlab::InputError("--dtype: " + no_dtype_reason(check) + "; --dtype applies to the model checks (see kvlab " +
                            check.name() + " --help)");
  kvlab::checks::RunContext ctx;
  ctx.seed = static_cast<std::uint64_t>(f.seed);
  ctx.dtype = kvlab::parse_dtype(f.dtype);
  ctx.weights = f.weights;
  ctx.draft_weights = f.draft_weights;
  // `auto` takes the device only where a GPU is present and the check's device path covers this
  // run: not with an explicit --dtype f64 (the device computes in float32, model/device_gpt.hpp),
  // nor where Check::cuda_gap names something the device path leaves out. `cuda` is as asked.
  const auto request = kvlab::parse_device(f.device);
  const bool wants_f64 = f.dtype_given && f.dtype == "f64";
  bool cuda_path = check.has_cuda();
  if (request == kvlab::DeviceRequest::automatic && cuda_path && !kvlab::cuda_devices().empty())
    cuda_path = !wants_f64 && check.cuda_gap(ctx).empty();
  ctx.device = kvlab::resolve_device(request, cuda_path, check.name());
  if (ctx.device == kvlab::Device::cuda) {
    if (wants_f64)
      throw kvlab::InputError("--dtype f64: the CUDA backend computes in float32; use --dtype f32 or --device cpu");
    ctx.dtype = kvlab::Dtype::f32;
  }
  if (!f.weights.empty() && !check.weights_refusal().empty())
    throw kvlab::InputError("--weights: " + check.name() + " does not run on a weights file: " +
                            check.weights_refusal());
  if (check.uses_draft_weights() && f.weights.empty() != f.draft_weights.empty())
    throw kvlab::InputError("--weights, --draft-weights: " + check.name() +
                            " takes both (the target and the draft) or neither (a seeded random pair)");
  return ctx;
}

/// Draws result.plots for `--plot` after the report. The terminal drawing goes to stdout after a
/// text or md report and to stderr after csv or json, which stay machine-readable. Without gnuplot,
/// one line on stderr says how to install it (the tables already hold the numbers).
void draw_plots(const kvlab::Result& result, const kvlab::PlotTarget& target, kvlab::Format format) {
  if (result.plots.empty()) {
    std::cerr << "kvlab: --plot: these options produce no plot\n";
    return;
  }
  const auto gnuplot = kvlab::find_gnuplot();
  if (!gnuplot) {
    std::cerr << "kvlab: --plot needs gnuplot, which is not installed (Debian/Ubuntu: apt-get install "
                 "gnuplot-nox); the tables above hold the same numbers\n";
    return;
  }
  const std::string drawing = kvlab::render_plots(*gnuplot, result.plots, target);
  if (!target.terminal) {  // through a temporary renamed into place: the old file stays on failure
    kvlab::safe_write_file(target.svg_path, drawing, "--plot");
    std::cerr << "kvlab: plot written to " << kvlab::shown_path(target.svg_path) << '\n';
    return;
  }
  const bool to_stdout = format == kvlab::Format::text || format == kvlab::Format::md;
  (to_stdout ? std::cout : std::cerr) << drawing << std::flush;
}

int run_one(Check& check, const CommonFlags& flags) {
  const auto format = kvlab::parse_format(flags.format);
  std::optional<kvlab::PlotTarget> plot;
  if (flags.plot_given) {
    plot = kvlab::parse_plot_target(flags.plot);
    // Refuse an unwritable file before any output (exit 2 prints nothing on stdout); the file
    // itself is not created or touched until the drawing is complete.
    if (!plot->terminal) kvlab::check_output_target(plot->svg_path, "--plot");
  }
  const kvlab::Lang lang = kvlab::resolve_lang(flags.lang);
  kvlab::Result result = check.run(resolve(flags, check));
  kvlab::write_result(std::cout, result, format, lang);
  if (plot) draw_plots(result, *plot, format);
  return result.passed() ? 0 : kExitFail;
}

int run_all(const CommonFlags& flags, const AllFlags& all) {
  const auto format = kvlab::parse_format(flags.format);
  kvlab::AllView view;
  view.full = all.full;
  view.quiet = all.quiet;
  view.lang = kvlab::resolve_lang(flags.lang);
  auto checks = kvlab::checks::make_all_checks();
  for (const auto& name : all.only) {  // a typo is refused before anything runs
    const bool known = std::any_of(checks.begin(), checks.end(), [&](const auto& c) { return c->name() == name; });
    if (!known) throw kvlab::InputError("--only: no check named '" + name + "'; `kvlab list` shows them");
  }
  auto selected = [&](const Check& c) {
    return all.only.empty() ? !c.is_bench() || all.bench
                            : std::find(all.only.begin(), all.only.end(), c.name()) != all.only.end();
  };
  // `all --device cuda`: the checks with a CUDA path run on the GPU, the others on the CPU (each
  // says so); without a GPU it is refused once, here, like a single check's --device cuda.
  const bool cuda = kvlab::parse_device(flags.device) == kvlab::DeviceRequest::cuda;
  const bool f64_asked = flags.dtype_given && flags.dtype == "f64";
  if (cuda) kvlab::resolve_device(kvlab::DeviceRequest::cuda, true, "all");
  if (cuda && f64_asked)
    throw kvlab::InputError("--dtype f64: the CUDA backend computes in float32; use --dtype f32 or --device cpu");
  std::vector<kvlab::Result> results;
  for (auto& check : checks) {
    if (!selected(*check)) {  // benchmarks take minutes: `all --bench` or `--only NAME`
      if (all.only.empty()) view.skipped_benchmarks.push_back(check->name());  // said, not silent
      continue;
    }
    CommonFlags own = flags;
    own.dtype_given = f64_asked && check->uses_dtype();  // an explicit f64 keeps `auto` on the CPU
    if (cuda && !check->has_cuda()) own.device = "cpu";
    results.push_back(check->run(resolve(own, *check)));
    if (cuda && !check->has_cuda())
      results.back().notes.push_back("--device cuda does not apply here: " + check->name() +
                                     " has no CUDA path and ran on the CPU (docs/gpu.md lists the checks that have one).");
    if (flags.dtype != "f64" && !check->uses_dtype())  // one rule for every check, not a note in each
      results.back().notes.push_back("--dtype " + flags.dtype + " does not apply here: " + check->name() +
                                     " has no model dtype to choose (`kvlab " + check->name() + " --help` says what it computes in).");
  }
  kvlab::write_all(std::cout, results, format, view);
  for (const auto& r : results)
    if (!r.passed()) return kExitFail;
  return 0;
}

int list_checks(const std::vector<std::unique_ptr<Check>>& checks, const std::string& format) {
  if (format == "json") {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& c : checks)
      j.push_back({{"check", c->name()},
                   {"source", c->source()},
                   {"summary", c->summary()},
                   {"bench", c->is_bench()},
                   {"plot", c->has_plot()}});
    std::cout << j.dump(2) << '\n';
    return 0;
  }
  // In markdown the names are code (README.md's check table is this output: tests/readme_fresh.sh).
  const bool md = format == "md";
  kvlab::Table t{"", {"check", "source", "what it shows"}, {}};
  for (const auto& c : checks)
    t.rows.push_back({md ? "`" + c->name() + "`" : c->name(), c->source(), c->summary()});
  kvlab::write_table(std::cout, t, kvlab::parse_format(format));
  return 0;
}

/// The command whose --help a command-line error points at: "kvlab NAME" (or "kvlab NAME SUB")
/// for the subcommand being parsed when it failed, "kvlab" before one was named. CLI11 lists a
/// subcommand as parsed as soon as its name is read, so a refused option of a check names it.
std::string command_of(const CLI::App& app) {
  std::string command = "kvlab";
  for (const CLI::App* sub = &app;;) {
    const auto named = sub->get_subcommands();
    if (named.empty()) return command;
    sub = named.front();
    command += " " + sub->get_name();
  }
}

/// The option of the parsed path (kvlab, its subcommand, a sub-subcommand) named by `flag`
/// ("--name"), or nullptr.
const CLI::Option* option_on_path(const std::vector<const CLI::App*>& path, const std::string& flag) {
  for (const CLI::App* a : path)
    if (const CLI::Option* opt = a->get_option_no_throw(flag)) return opt;
  return nullptr;
}

/// The first `--name` (or `--name=value`) among the arguments that no command on the parsed path
/// takes, or "". A known option's value is skipped, even when it starts with "--" (`--config
/// --x.json`); `--` ends the scan. CLI11 reports a missing required option before an unexpected
/// one (`kvlab model init --bogus` said "--out is required"), and an extra argument as a bare
/// list; the unknown option is the mistake to name first.
std::string unknown_option(const CLI::App& app, int argc, char** argv) {
  std::vector<const CLI::App*> path{&app};
  for (auto named = app.get_subcommands(); !named.empty(); named = named.front()->get_subcommands())
    path.push_back(named.front());
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--") break;  // what follows is positional
    if (!arg.starts_with("--") || arg.size() == 2) continue;
    const auto eq = arg.find('=');
    const std::string flag(arg.substr(0, eq));
    if (flag == "--") return std::string(arg);  // "--=x": no name at all
    const CLI::Option* opt = option_on_path(path, flag);
    if (opt == nullptr) return flag;
    if (eq == std::string_view::npos && opt->get_expected_max() > 0) ++i;  // its value
  }
  return "";
}

/// For `kvlab --seed 3 kv-size`: options before the command's name, where CLI11 would only say
/// that "3 --seed" were not expected. The line that says where options go, or "" when argv[1] is
/// not an option or no command is named after it. A word right after an option is taken for the
/// option's value, not for a command (`kvlab --only kv-size all` names `all`).
std::string misplaced_options(const CLI::App& app, int argc, char** argv) {
  if (argc < 3 || argv[1][0] != '-') return "";
  const std::string_view first = argv[1];
  if (first == "-h" || first == "--help" || first == "--version") return "";
  for (int i = 2; i < argc; ++i) {
    const std::string_view before = argv[i - 1];
    if (before.starts_with('-') && before.find('=') == std::string_view::npos) continue;  // that option's value
    for (const CLI::App* sub : app.get_subcommands({}))
      if (sub->get_name() == argv[i])
        return fmt::format("options go after the command's name: kvlab {} [options] (got '{}' before '{}')", argv[i],
                           kvlab::terminal_safe(kvlab::fit_width(argv[1], 40)), argv[i]);
  }
  return "";
}

/// For `kvlab NAME --plot ...` on a check that draws no plot, the one line that says so and names
/// the checks that do; "" when `check` draws or --plot is not among the arguments.
std::string plot_refusal(const Check& check, const std::vector<std::unique_ptr<Check>>& checks, int argc,
                         char** argv) {
  if (check.has_plot()) return "";
  bool asked = false;
  for (int i = 2; i < argc; ++i) {
    const std::string_view arg = argv[i];
    asked = asked || arg == "--plot" || arg.starts_with("--plot=");
  }
  if (!asked) return "";
  std::string drawing;
  for (const auto& c : checks)
    if (c->has_plot()) drawing += (drawing.empty() ? "" : ", ") + c->name();
  return fmt::format("--plot: {} draws no plot; the checks that do: {}", check.name(), drawing);
}

/// `kvlab explain NAME`: the check's claim, source and derivation (Check::derivation), and the
/// command that reproduces it.
int explain_check(const std::vector<std::unique_ptr<Check>>& checks, const std::string& name) {
  for (const auto& c : checks) {
    if (c->name() != name) continue;
    std::string derivation = c->derivation();
    if (!derivation.empty() && derivation.back() != '\n') derivation += '\n';
    if (derivation.empty()) {
      std::cerr << "kvlab: internal error: " << name << " has no derivation written (please report it)\n";
      return kExitInternal;
    }
    std::cout << fmt::format("{} — {}\n{}\n\n{}\nReproduce it: kvlab {}   (options: kvlab {} --help)\n",
                             name, c->source(), c->summary(), derivation, name, name);
    return 0;
  }
  throw kvlab::InputError("explain: no check named '" + name + "'; `kvlab list` shows them");
}

/// `kvlab list --options`: every option of every check subcommand, one per line,
/// "CHECK<TAB>--OPTION<TAB>TYPE" (TYPE as CLI11 names it: INT, FLOAT, TEXT, FILE, ... or FLAG).
/// The bad-input sweep (tests/sweep.sh) reads it, so a new check joins the sweep by registering.
int list_options(const std::vector<CLI::App*>& subs) {
  for (const CLI::App* sub : subs)
    for (const CLI::Option* opt : sub->get_options()) {
      if (opt->get_lnames().empty() || opt->get_name() == "--help") continue;
      const std::string type = opt->get_expected_max() == 0 ? "FLAG" : opt->get_type_name();
      std::cout << sub->get_name() << '\t' << "--" << opt->get_lnames().front() << '\t' << type << '\n';
    }
  return 0;
}

void print_info(const std::string& format) {
  auto info = kvlab::app::build_info();
  info.insert(info.begin() + 5, {"cli11", CLI11_VERSION});
  if (format == "json") {
    nlohmann::json j;
    for (const auto& [k, v] : info) j[k] = v;
    std::cout << j.dump(2) << '\n';
    return;
  }
  for (const auto& [k, v] : info) std::cout << fmt::format("{:<17} {}\n", k + ":", v);
}

/// The command line, set up and run; main() catches what escapes the setup.
int run_cli(int argc, char** argv) {
  CLI::App app{
      "kvlab: the claims of an LLM-inference course (KV cache, MQA/GQA, roofline, speculative\n"
      "decoding), each reproduced by a subcommand that prints the claim, its source, the expected\n"
      "value with its tolerance, what kvlab measured and the verdict.\n"
      "Exit status: 0 every claim held, 1 a claim did not hold, 2 bad usage or input (or a\n"
      "failed CUDA call, named), 3 an internal error (a kvlab bug: please report it).",
      "kvlab"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("kvlab ") + kvlab::app::build_info()[0].second);

  auto checks = kvlab::checks::make_all_checks();

  std::string list_format = "text";
  auto* list = app.add_subcommand("list", "List the checks with their sources");
  bool list_with_options = false;
  list->add_flag("--options", list_with_options,
                 "Print every check's options as CHECK<TAB>--OPTION<TAB>TYPE (for scripts)");
  list->add_option("--format", list_format, "text, md, csv or json")
      ->check(CLI::IsMember({"text", "md", "csv", "json"}));

  kvlab::app::QuizFlags quiz_flags;
  auto* quiz = kvlab::app::add_quiz_command(app, quiz_flags);
  kvlab::app::SelftestFlags selftest_flags;
  auto* selftest = kvlab::app::add_selftest_command(app, selftest_flags);
  kvlab::app::TrainFlags train_flags;
  auto* train = kvlab::app::add_train_command(app, train_flags);

  kvlab::app::CheatsheetFlags cheatsheet_flags;
  auto* cheatsheet = kvlab::app::add_cheatsheet_command(app, cheatsheet_flags);
  kvlab::app::PlanFlags plan_flags;
  auto* plan = kvlab::app::add_plan_command(app, plan_flags);
  kvlab::app::ErrataFlags errata_flags;
  auto* errata = kvlab::app::add_errata_command(app, errata_flags);
  kvlab::app::ModelInitFlags model_init_flags;
  auto* model_init = kvlab::app::add_model_command(app, model_init_flags);
  kvlab::app::PerplexityFlags perplexity_flags;
  auto* perplexity = kvlab::app::add_perplexity_command(app, perplexity_flags);

  std::string explain_name;
  auto* explain = app.add_subcommand("explain", "The derivation behind a check's claim, with its source");
  explain->add_option("check", explain_name, "A check's name, as `kvlab list` prints it")->required();

  CommonFlags all_flags;
  auto* all = app.add_subcommand(
      "all", "Run every check with its defaults: one line each (verdict, the document's and kvlab's figures), "
             "the errata count, and 'N passed, M failed'");
  add_common_flags(*all, all_flags);
  all->get_option("--dtype")->each([&all_flags](const std::string&) { all_flags.dtype_given = true; });
  AllFlags all_only;
  all->add_flag("--bench", all_only.bench, "Also run the benchmarks (cpu-roofline, spec-wallclock: about a minute each)");
  all->add_flag("--full", all_only.full, "Print every check's complete report instead of one line per check");
  all->add_flag("--quiet", all_only.quiet, "Show only the checks that did not hold (the counts still cover all)");
  all->add_option("--only", all_only.only, "Run only these checks: NAME,NAME (a benchmark named here runs too)")
      ->delimiter(',');
  all->footer("Each line: the check, its verdict (held; held * = held, but a figure of the document is off; DID NOT "
              "HOLD; skipped), the document's figure and kvlab's. `kvlab NAME` prints one check's report, "
              "`kvlab errata` explains the document figures that are off.");

  kvlab::app::MachineFlags machine_flags;
  auto* machine = kvlab::app::add_machine_command(app, machine_flags);
  kvlab::app::BenchFlags bench_flags;
  auto* bench = kvlab::app::add_bench_command(app, bench_flags);
  kvlab::app::ParityFlags parity_flags;
  auto* parity = kvlab::app::add_parity_command(app, parity_flags);

  std::string info_format = "text";
  auto* info = app.add_subcommand("info", "Version, build type, CUDA, devices, library versions");
  info->add_option("--format", info_format, "text or json")->check(CLI::IsMember({"text", "json"}));

  std::vector<CommonFlags> flags(checks.size());
  std::vector<CLI::App*> subs;
  std::deque<kvlab::checks::OptionSet> option_sets;  // each check's options, alive until it runs
  for (std::size_t i = 0; i < checks.size(); ++i) {
    auto* sub = app.add_subcommand(checks[i]->name(), checks[i]->summary());
    sub->footer(fmt::format("Source: {}\n{}", checks[i]->source(), checks[i]->description()));
    add_common_flags(*sub, flags[i], checks[i].get());
    checks[i]->bind(option_sets.emplace_back(*sub));
    if (checks[i]->has_plot())
      sub->add_option("--plot", flags[i].plot,
                      "Also draw the sweep: FILE.svg, or 'term' for the terminal (needs gnuplot)")
          ->each([&f = flags[i]](const std::string&) { f.plot_given = true; });
    if (checks[i]->uses_draft_weights()) {
      sub->add_option("--weights", flags[i].weights,
                      "The target: the model in FILE.safetensors (config from the file; docs/weights.md) "
                      "instead of a seeded random one; with --draft-weights")
          ->type_name("FILE")
          ->check(kvlab::checks::PathGiven());
      sub->add_option("--draft-weights", flags[i].draft_weights,
                      "The draft: the model in FILE.safetensors (same vocabulary as the target); with --weights")
          ->type_name("FILE")
          ->check(kvlab::checks::PathGiven());
    } else if (checks[i]->uses_weights()) {
      sub->add_option("--weights", flags[i].weights,
                      "Run on the model in FILE.safetensors (config from the file; docs/weights.md) "
                      "instead of a seeded random one")
          ->type_name("FILE")
          ->check(kvlab::checks::PathGiven());
    } else if (!checks[i]->weights_refusal().empty()) {
      sub->add_option("--weights", flags[i].weights,
                      "Not on this check (it says why when given): " + checks[i]->weights_refusal())
          ->type_name("FILE")
          ->check(kvlab::checks::PathGiven());
    }
    sub->get_option("--dtype")->each([&f = flags[i]](const std::string&) { f.dtype_given = true; });
    subs.push_back(sub);
  }

  try {
    if (argc > 1 && argv[1][0] != '-') {  // CLI11 would only say "A subcommand is required"
      const std::string command = argv[1];
      bool known = false;
      for (const CLI::App* sub : app.get_subcommands({})) known = known || sub->get_name() == command;
      if (!known)
        throw kvlab::InputError("unknown command '" + command + "'; `kvlab list` shows the checks, `kvlab --help` the rest");
    }
    if (const std::string misplaced = misplaced_options(app, argc, argv); !misplaced.empty())
      throw kvlab::InputError(misplaced);
    app.parse(argc, argv);
    if (list->parsed()) return list_with_options ? list_options(subs) : list_checks(checks, list_format);
    if (info->parsed()) {
      print_info(info_format);
      return 0;
    }
    if (explain->parsed()) return explain_check(checks, explain_name);
    if (quiz->parsed()) return kvlab::app::run_quiz(quiz_flags, std::cin, std::cout);
    if (selftest->parsed()) return kvlab::app::run_selftest(selftest_flags, std::cin, std::cout);
    if (cheatsheet->parsed()) return kvlab::app::run_cheatsheet(cheatsheet_flags, std::cout);
    if (plan->parsed()) return kvlab::app::run_plan(plan_flags, std::cout);
    if (errata->parsed()) return kvlab::app::run_errata(errata_flags, std::cout);
    if (machine->parsed()) return kvlab::app::run_machine(machine_flags, std::cout);
    if (bench->parsed()) return kvlab::app::run_bench(bench_flags, std::cout);
    if (parity->parsed()) return kvlab::app::run_parity_command(parity_flags, std::cout);
    if (all->parsed()) return run_all(all_flags, all_only);
    if (train->parsed()) return kvlab::app::run_train(train_flags, std::cout);
    if (model_init->parsed()) return kvlab::app::run_model_init(model_init_flags, std::cout);
    if (perplexity->parsed()) return kvlab::app::run_perplexity(perplexity_flags, std::cout);
    for (std::size_t i = 0; i < checks.size(); ++i)
      if (subs[i]->parsed()) return run_one(*checks[i], flags[i]);
    return kExitUsage;
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string msg = e.what();
    for (auto& ch : msg)
      if (ch == '\n') ch = ' ';
    for (std::size_t i = 0; i < checks.size(); ++i)
      if (subs[i]->parsed())
        if (const std::string refusal = plot_refusal(*checks[i], checks, argc, argv); !refusal.empty()) {
          std::cerr << "kvlab: " << refusal << '\n';
          return kExitUsage;
        }
    if (const std::string flag = unknown_option(app, argc, argv); !flag.empty())
      msg = fmt::format("{}: not an option of {}", flag, command_of(app));
    msg = kvlab::terminal_safe(msg);  // an argument's control bytes never reach the terminal
    std::cerr << "kvlab: " << msg << " (see " << command_of(app) << " --help)\n";
    return kExitUsage;
  } catch (const kvlab::InputError& e) {  // it may quote what the user typed: kept to one safe line
    std::cerr << "kvlab: " << kvlab::terminal_safe(e.what()) << '\n';
    return kExitUsage;
  } catch (const kvlab::PlotError& e) {
    std::cerr << "kvlab: " << kvlab::terminal_safe(e.what()) << '\n';
    return kExitUsage;
  } catch (const kvlab::kernels::CudaError& e) {  // a failed CUDA call or a shape a kernel does not take
    std::cerr << "kvlab: CUDA: " << e.what() << '\n';
    return kExitUsage;
  } catch (const std::bad_alloc&) {
    std::cerr << "kvlab: out of memory: the sizes asked for do not fit in this machine's memory; use smaller ones\n";
    return kExitUsage;
  } catch (const std::exception& e) {
    std::cerr << "kvlab: internal error: " << e.what() << '\n';
    return kExitInternal;
  }
}

}  // namespace

/// run_cli(), with standard output checked and nothing let through: a closed stdout is refused
/// before anything runs; a write or the final flush that fails (a full disk, `> /dev/full`) is one
/// line and exit 2, not a truncated report with exit 0; what escapes the command line's setup
/// (reading something before it is parsed) is one line, never an abort.
int main(int argc, char** argv) {
  int status = kExitUsage;
  try {
    kvlab::require_stdout_open();
    status = run_cli(argc, argv);
  } catch (const kvlab::InputError& e) {
    std::cerr << "kvlab: " << kvlab::terminal_safe(e.what()) << '\n';
    return kExitUsage;
  } catch (const std::exception& e) {
    std::cerr << "kvlab: internal error: " << e.what() << '\n';
    return kExitInternal;
  }
  // A failed write to stdout is the error, unless one was already reported (one line, exit 2).
  if (const std::string why = kvlab::stdout_error(); !why.empty() && status != kExitUsage) {
    std::cerr << "kvlab: cannot write the report to standard output: " << why << '\n';
    return kExitUsage;
  }
  return status;
}

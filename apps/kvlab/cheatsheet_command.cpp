#include "cheatsheet_command.hpp"

#include <algorithm>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <ostream>

#include "cheatsheet/cheatsheet.hpp"
#include "core/error.hpp"
#include "io/catalogue.hpp"
#include "report/writers.hpp"
#include "framework/options.hpp"

namespace kvlab::app {

CLI::App* add_cheatsheet_command(CLI::App& app, CheatsheetFlags& f) {
  auto* sub = app.add_subcommand(
      "cheatsheet", "The course's numeric tables (000 §2.2–§9.3, 004 groups 3–6, §2.5, §3.3, 003 Q6/Q7), computed");
  sub->footer(
      "Every number comes from the library functions the checks use; the document's own figures appear in "
      "footnotes with the arithmetic. Each table states its assumptions; --ctx, --batch, --kv-dtype and --gpu "
      "override them where the table uses them (a footnote says when one does not apply). "
      "docs/cheatsheet.md is `kvlab cheatsheet --format md`.");
  std::vector<std::string> names;
  for (const auto& e : cheatsheet_entries()) names.push_back(e.name);
  sub->add_option("table", f.tables, "Tables to print (default: all, in document order); --list names them")
      ->check(CLI::IsMember(names));
  sub->add_flag("--list", f.list, "List the tables with their sources");
  sub->add_option("--format", f.format, "Output: text (default), md, csv or json")
      ->check(CLI::IsMember({"text", "md", "csv", "json"}));
  sub->add_option("--ctx", f.ctx, fmt::format("Cached tokens per sequence, 1 to {} (4k, 128k, 1M accepted)", kMaxCheatsheetCtx))
      ->transform(kvlab::checks::TokenCount(static_cast<std::int64_t>(kMaxCheatsheetCtx)));
  sub->add_option("--batch", f.batch, fmt::format("Sequences, 1 to {}", kMaxCheatsheetBatch))
      ->transform(kvlab::checks::IntRange(1, static_cast<std::int64_t>(kMaxCheatsheetBatch)));
  std::vector<std::string> dtypes;
  for (CacheDtype d : all_cache_dtypes()) dtypes.push_back(cache_dtype_name(d));
  sub->add_option("--kv-dtype", f.kv_dtype, "Cache element type: fp32, fp16, bf16, fp8, int8 or int4")
      ->check(CLI::IsMember(dtypes));
  // The catalogue is read when --gpu is given, not while the command line is set up: a KVLAB_DATA
  // without a catalogue stopped every command, --version included.
  sub->add_option("--gpu", f.gpu, "A catalogue GPU (data/hardware), e.g. a100-80gb, h100-sxm")
      ->check(CLI::Validator(
          [](std::string& name) -> std::string {
            const auto names = gpu_names();  // InputError naming KVLAB_DATA when there is no catalogue
            if (std::find(names.begin(), names.end(), name) != names.end()) return {};
            return fmt::format("{} not in {{{}}}", printable(name, 60), fmt::join(names, ","));
          },
          "GPU"));
  return sub;
}

int run_cheatsheet(const CheatsheetFlags& f, std::ostream& out) {
  const Format format = parse_format(f.format);
  if (f.list) {
    if (format == Format::json) {
      nlohmann::json j = nlohmann::json::array();
      for (const auto& e : cheatsheet_entries())
        j.push_back({{"table", e.name}, {"source", e.source}, {"summary", e.summary}, {"overrides", e.overrides}});
      out << j.dump(2) << '\n';
      return 0;
    }
    Table t{"", {"table", "source", "what it shows", "overrides"}, {}};
    for (const auto& e : cheatsheet_entries()) {
      std::string o;
      for (const auto& x : e.overrides) o += (o.empty() ? "" : " ") + x;
      t.rows.push_back({e.name, e.source, e.summary, o.empty() ? std::string("—") : o});
    }
    write_table(out, t, format);
    return 0;
  }
  CheatsheetParams p;
  if (f.ctx) p.ctx = static_cast<std::uint64_t>(*f.ctx);
  if (f.batch) p.batch = static_cast<std::uint64_t>(*f.batch);
  if (f.kv_dtype) p.kv_dtype = parse_cache_dtype(*f.kv_dtype);
  p.gpu = f.gpu;
  write_cheatsheet(out, build_cheatsheet(f.tables, p), format);
  return 0;
}

}  // namespace kvlab::app

// kvlab cheatsheet (checks/cheatsheet): every table builds, states its source and
// assumptions; a few cells equal the metric of the check that judges the same number (the check's
// run_x function is called, not re-derived); overrides change what they should and are rejected
// out of range, naming the option.
#include <doctest/doctest.h>

#include <cmath>
#include <set>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cache_flops.hpp"
#include "causal_mask.hpp"
#include "cheatsheet/cheatsheet.hpp"
#include "kv_size.hpp"
#include "max_batch.hpp"
#include "mla_cache.hpp"
#include "roofline.hpp"
#include "spec/expected_tokens.hpp"
#include "spec_etau.hpp"
#include "test_util.hpp"

namespace cheatsheet_cheatsheet_test {

namespace {

using namespace kvlab;
using kvlab::test::input_error;

const CheatTable& table_named(const std::vector<CheatTable>& ts, const std::string& name) {
  for (const auto& t : ts)
    if (t.name == name) return t;
  FAIL("no table " << name);
  return ts.front();
}

/// The cell in column `column` of the row whose first cell is `row`, as a double.
double cell(const CheatTable& t, const std::string& row, const std::string& column) {
  std::size_t col = t.table.columns.size();
  for (std::size_t i = 0; i < t.table.columns.size(); ++i)
    if (t.table.columns[i] == column) col = i;
  REQUIRE_MESSAGE(col < t.table.columns.size(), "no column " << column << " in " << t.name);
  for (const auto& r : t.table.rows) {
    const auto* label = std::get_if<std::string>(&r[0]);
    const std::string first = label ? *label : format_number(std::visit([](auto x) -> double {
      if constexpr (std::is_same_v<decltype(x), std::string>) return 0.0;
      else return static_cast<double>(x);
    }, r[0]));
    if (first != row) continue;
    if (const auto* d = std::get_if<double>(&r[col])) return *d;
    if (const auto* n = std::get_if<std::int64_t>(&r[col])) return static_cast<double>(*n);
    FAIL("cell " << row << " / " << column << " of " << t.name << " is text");
  }
  FAIL("no row " << row << " in " << t.name);
  return 0.0;
}

/// A cell of the row whose first two cells are numbers a and b (the 9.2 and group-5 grids).
double grid_cell(const CheatTable& t, double a, double b, std::size_t col) {
  const auto num = [](const Cell& c) {
    if (const auto* d = std::get_if<double>(&c)) return *d;
    if (const auto* n = std::get_if<std::int64_t>(&c)) return static_cast<double>(*n);
    return std::nan("");
  };
  for (const auto& r : t.table.rows)
    if (num(r[0]) == a && num(r[1]) == b) return num(r[col]);
  FAIL("no row " << a << ", " << b << " in " << t.name);
  return 0.0;
}

const std::vector<CheatTable>& defaults() {
  static const std::vector<CheatTable> ts = build_cheatsheet({}, {});
  return ts;
}

}  // namespace

TEST_CASE("cheatsheet: every table builds in document order, with its source and assumptions") {
  const auto& ts = defaults();
  REQUIRE(ts.size() == cheatsheet_entries().size());
  std::set<std::string> names;
  std::string last_doc = "000";
  const std::string order = "000 004 003";
  for (std::size_t i = 0; i < ts.size(); ++i) {
    const CheatTable& t = ts[i];
    CHECK(t.name == cheatsheet_entries()[i].name);
    CHECK(names.insert(t.name).second);
    CHECK(!t.source.empty());
    CHECK(!t.assumptions.empty());
    CHECK(!t.table.rows.empty());
    const std::string doc = t.source.substr(0, 3);
    CHECK(order.find(doc) >= order.find(last_doc));  // 000, then 004, then 003
    last_doc = doc;
    for (const auto& r : t.table.rows) {
      CHECK(r.size() == t.table.columns.size());
      for (const auto& c : r)
        if (const auto* d = std::get_if<double>(&c)) CHECK(std::isfinite(*d));
    }
  }
  // The course's numeric tables: 000 §2.2, §4.1, §4.5, §8.1, §9.1–9.3; 004 groups 3–6, §2.5, §3.3; 003 Q6, Q7.
  for (const char* n : {"000-2.2", "000-4.1", "000-4.5", "000-8.1", "000-9.1", "000-9.2", "000-9.3", "004-g3",
                        "004-g4", "004-g5", "004-g6", "004-2.5", "004-3.3", "003-Q6", "003-Q7"})
    CHECK(names.count(n) == 1);
}

TEST_CASE("cheatsheet: cells equal the metrics of the checks that judge the same numbers") {
  const auto& ts = defaults();
  const checks::RunContext ctx;

  const Result kv = checks::run_kv_size({}, ctx);
  const CheatTable& models = table_named(ts, "000-2.2");
  CHECK(cell(models, "deepseek-v2", "bytes (batch × ctx)") == kv.metric_value("bytes_deepseek_v2_4k_fp16"));
  CHECK(cell(models, "llama-3-70b", "bytes (batch × ctx)") == kv.metric_value("bytes_llama_3_70b_4k_fp16"));
  CHECK(cell(table_named(ts, "004-g4"), "llama-2-7b", "bytes/token") == kv.metric_value("bytes_per_token_llama_2_7b"));

  const Result roof = checks::run_roofline({}, ctx);
  const CheatTable& g5 = table_named(ts, "004-g5");
  CHECK(grid_cell(g5, 1, 1024, 7) == roof.metric_value("tokens_per_s"));
  CHECK(grid_cell(g5, 8, 1024, 7) == roof.metric_value("tokens_per_s_batch8"));
  CHECK(grid_cell(g5, 64, 4096, 4) == roof.metric_value("intensity_batch64_ctx4096"));

  checks::MaxBatchOptions mb;
  mb.params = 70e9;  // the document's 140 GB of weights and 400 GB budget, as the 000 §9.3 table
  mb.kv_budget_gb = 400;
  const Result batch = checks::run_max_batch(mb, ctx);
  CHECK(cell(table_named(ts, "000-9.3"), "70B alone", "max batch (400 GB − draft)") == batch.metric_value("max_batch"));

  const Result flops = checks::run_cache_flops({}, ctx);
  CHECK(cell(table_named(ts, "004-g3"), "2,048", "no cache / cache") ==
        doctest::Approx(flops.metric_value("ratio_naive_over_cached_d4096_t2048")).epsilon(1e-12));

  const Result mla = checks::run_mla_cache({}, ctx);
  CHECK(cell(table_named(ts, "003-Q7"), "MLA", "× smaller than MHA") ==
        doctest::Approx(mla.metric_value("compression_with_rope_key")).epsilon(1e-12));
  // 000 §9.1's MLA-shaped row: 80 layers on both sides, so the per-layer ratio mla-cache judges.
  CHECK(cell(table_named(ts, "000-9.1"), "MLA-shaped", "× smaller than MHA") ==
        doctest::Approx(mla.metric_value("ratio_mha_over_mla")).epsilon(1e-12));

  const Result mask = checks::run_causal_mask({}, ctx);
  CHECK(cell(table_named(ts, "004-3.3"), "chunk / verify (1 < T < S)", "cells top-left wrongly hides") ==
        mask.metric_value("chunk_cells_wrong_top_left"));

  checks::SpecEtauOptions etau;
  etau.alpha = 0.6;
  etau.k = 4;
  etau.samples = 1000;
  const Result e = checks::run_spec_etau(etau, ctx);
  CHECK(grid_cell(table_named(ts, "000-9.2"), 0.6, 4, 3) == e.metric_value("speedup"));
}

TEST_CASE("cheatsheet: overrides change what they should; a given override a table ignores is said") {
  CheatsheetParams p;
  p.ctx = 8192;
  p.batch = 2;
  const auto ts = build_cheatsheet({"000-2.2", "000-8.1"}, p);
  REQUIRE(ts.size() == 2);
  CHECK(cell(ts[0], "llama-3-70b", "bytes (batch × ctx)") ==
        4.0 * cell(table_named(defaults(), "000-2.2"), "llama-3-70b", "bytes (batch × ctx)"));
  CHECK(ts[0].assumptions.find("ctx 8192") != std::string::npos);
  bool said = false;
  for (const auto& n : ts[1].notes) said = said || n.find("--ctx does not apply") != std::string::npos;
  CHECK(said);
  // The errata footnotes are about the document's own parameters: not shown under overrides.
  CHECK(ts[0].notes.empty());

  p = {};
  p.kv_dtype = CacheDtype::int4;
  p.gpu = "h100-sxm";
  const auto g5 = build_cheatsheet({"004-g5"}, p);
  CHECK(g5[0].assumptions.find("h100-sxm") != std::string::npos);
  CHECK(grid_cell(g5[0], 64, 4096, 3) == doctest::Approx(32.0));  // 128 GiB of bf16 KV / 4
}

TEST_CASE("cheatsheet: bad input is one InputError line naming the option") {
  CheatsheetParams p;
  p.ctx = 0;
  CHECK(input_error([&] { build_cheatsheet({}, p); }).rfind("--ctx", 0) == 0);
  p = {};
  p.batch = kMaxCheatsheetBatch + 1;
  CHECK(input_error([&] { build_cheatsheet({}, p); }).rfind("--batch", 0) == 0);
  p = {};
  p.gpu = "tpu-v5";
  CHECK(input_error([&] { build_cheatsheet({}, p); }).rfind("--gpu", 0) == 0);
  CHECK(input_error([&] { build_cheatsheet({"000-9.9"}, {}); }).find("000-9.9") != std::string::npos);
  // The largest accepted sizes still fit in 64 bits for every table.
  p = {};
  p.ctx = kMaxCheatsheetCtx;
  p.batch = kMaxCheatsheetBatch;
  CHECK_NOTHROW(build_cheatsheet({}, p));
}

TEST_CASE("cheatsheet: alpha_for_speedup inverts E[τ] / (1 + K·c)") {
  const auto a = alpha_for_speedup(2.0, 0.05, 8);
  REQUIRE(a);
  CHECK(spec::speedup(a->alpha, a->k, 0.05) == doctest::Approx(2.0).epsilon(1e-9));
  for (int k = 1; k <= 8; ++k) {  // no K reaches 2× with a smaller α
    const double tokens = 2.0 * (1.0 + k * 0.05);
    if (tokens <= k + 1.0) CHECK(spec::alpha_for_expected_tokens(tokens, k) >= a->alpha - 1e-12);
  }
  CHECK(!alpha_for_speedup(9.5, 0.05, 8));  // (K + 1) / (1 + K·c) < 9.5 for every K <= 8
  CHECK(input_error([] { alpha_for_speedup(0.5, 0.05, 8); }).find("speedup") != std::string::npos);
  CHECK(input_error([] { alpha_for_speedup(2.0, -1.0, 8); }).find("c (draft") != std::string::npos);
}

TEST_CASE("cheatsheet: the writers") {
  const auto& ts = defaults();
  std::ostringstream md, js, csv, text;
  write_cheatsheet(md, ts, Format::md);
  write_cheatsheet(js, ts, Format::json);
  write_cheatsheet(csv, ts, Format::csv);
  write_cheatsheet(text, ts, Format::text);
  CHECK(md.str().find("## 000-2.2 — ") != std::string::npos);
  CHECK(md.str().find("*Source:* 000 §2.2") != std::string::npos);
  CHECK(csv.str().find("# 004-3.3: ") != std::string::npos);
  CHECK(text.str().find("== 003-Q7 — ") != std::string::npos);
  const auto j = nlohmann::json::parse(js.str());
  REQUIRE(j["tables"].size() == ts.size());
  CHECK(j["tables"][0]["name"] == "000-2.2");
  CHECK(j["tables"][0]["rows"][0].size() == j["tables"][0]["columns"].size());
}

}  // namespace cheatsheet_cheatsheet_test

#include "support/cheatsheet_cells.hpp"

#include <cmath>
#include <map>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "io/catalogue.hpp"
#include "cost/premises.hpp"

namespace kvlab::checks {
namespace {

constexpr double kGiBd = 1024.0 * 1024.0 * 1024.0;
constexpr double kCellRel = 1e-9;

/// A cell as a number; NaN for text.
double number(const Cell& c) {
  if (const auto* d = std::get_if<double>(&c)) return *d;
  if (const auto* i = std::get_if<std::int64_t>(&c)) return static_cast<double>(*i);
  return std::nan("");
}

std::string text(const Cell& c) {
  if (const auto* s = std::get_if<std::string>(&c)) return *s;
  return {};
}

/// Expected values for one table: row label → (column index → value).
using Expected = std::map<std::string, std::map<std::size_t, double>>;

struct Tally {
  int cells = 0, wrong = 0;
  std::string first_wrong;
};

Tally compare(const CheatTable& t, const Expected& want) {
  Tally tally;
  for (const auto& [label, cols] : want) {
    const std::vector<Cell>* row = nullptr;
    for (const auto& rr : t.table.rows)
      if (!rr.empty() && text(rr[0]) == label) row = &rr;
    if (!row) throw std::runtime_error(fmt::format("cheatsheet {}: no row '{}'", t.name, label));
    for (const auto& [col, value] : cols) {
      ++tally.cells;
      const double got = col < row->size() ? number((*row)[col]) : std::nan("");
      const bool ok = std::isfinite(got) && std::abs(got - value) <= kCellRel * std::abs(value);
      if (!ok && tally.wrong++ == 0)
        tally.first_wrong = fmt::format("{} / {}: {} vs {}", label, t.table.columns.at(col), got, value);
    }
  }
  return tally;
}

std::uint64_t facts_bytes(const std::string& model) {
  return load_model(model).kv_bytes_per_token_16bit.value_or(0);
}

// One table's closed forms: its name, its document section and the cells expected.
struct TableWant {
  std::string name, source;
  Expected want;
};

// 000 §9.3's figures: one 4096-token sequence of llama-3-70b's cache (data/facts.md), the 7B
// draft's 2·7e9 B; EAGLE's head = one LLaMA-70B layer (attention 2d² for Q and O, 2·d·1024 for
// GQA-8's K and V, SwiGLU 3·d·28672) + the 2d → d fusion layer, d = 8192.
constexpr double kCtx = 4096, kD = 8192;
constexpr double kEagle = 2 * kD * kD + 2 * kD * 1024 + 3 * kD * 28672 + 2 * kD * kD;

// 004 §2.5: llama-2-70b as GQA-8 and as MHA (its K/V projections 8× wider: +9,395,240,960
// parameters), one decode step at batch 1, ctx 4096, bf16 weights and cache, on an a100-80gb.
TableWant closed_form_004_2_5() {
  // One 70B shape: L 80, 64 query heads of 128, fp16; d = 8192.
  const double ctx = kCtx, L = 80, H = 64, dh = 128, d = kD, mha = 2 * L * H * dh * 2, gqa8 = mha / 8;
  const ModelSpec m = load_model("llama-2-70b");
  const double n_gqa = static_cast<double>(m.num_parameters.value_or(0));
  const double n_mha = n_gqa + L * 2 * d * (H - 8) * dh;
  const double kv_mha = mha * ctx, kv_gqa = gqa8 * ctx, attn = 4 * ctx * L * d;
  const double lin_mha = 2 * (4 * d * d + 3 * d * 28672), lin_gqa = 2 * (2 * d * d + 2 * d * 1024 + 3 * d * 28672);
  const double bytes_mha = 2 * n_mha + kv_mha, bytes_gqa = 2 * n_gqa + kv_gqa, bw = load_gpu(premises::kGpu).bandwidth_bytes_per_s;
  Expected want;
  want["KV cache, batch × ctx (GiB)"] = {{1, kv_mha / kGiBd}, {2, kv_gqa / kGiBd}, {3, 8}};
  want["KV bytes read per decode step (GiB)"] = {{1, kv_mha / kGiBd}, {2, kv_gqa / kGiBd}, {3, 8}};
  want["attention FLOPs per decode step (GFLOP)"] = {{1, attn / 1e9}, {2, attn / 1e9}, {3, 1}};
  want["K/V projection parameters per layer (M)"] = {{1, 2 * d * H * dh / 1e6}, {2, 2 * d * 8 * dh / 1e6}, {3, 8}};
  want["linear-layer FLOPs per token and layer (GFLOP)"] = {{1, lin_mha / 1e9}, {2, lin_gqa / 1e9}, {3, lin_mha / lin_gqa}};
  want["bytes read per decode step (GB)"] = {{1, bytes_mha / 1e9}, {2, bytes_gqa / 1e9}, {3, bytes_mha / bytes_gqa}};
  want["decode step time, roofline (ms)"] = {{1, bytes_mha / bw * 1e3}, {2, bytes_gqa / bw * 1e3}, {3, bytes_mha / bytes_gqa}};
  return {"004-2.5", "004 §2.5", std::move(want)};
}

std::vector<TableWant> closed_forms() {
  const double ctx = kCtx;
  std::vector<TableWant> out;

  // 000 §2.2: bytes per token from data/facts.md; elements = bytes / 2 (fp16); one 4096-token sequence.
  {
    Expected want;
    for (const char* m : {"llama-2-7b", "llama-2-13b", "llama-2-70b", "llama-3-8b", "llama-3-70b", "mistral-7b",
                          "deepseek-v2"}) {
      const double b = static_cast<double>(facts_bytes(m));
      want[m] = {{4, b / 2}, {5, b}, {6, b * ctx}, {7, b * ctx / 1e9}, {8, b * ctx / kGiBd}};
    }
    out.push_back({"000-2.2", "000 §2.2", std::move(want)});
  }
  // One 70B shape: L 80, 64 query heads of 128, fp16. Bytes per token of each route.
  const double L = 80, H = 64, dh = 128, mha = 2 * L * H * dh * 2;
  const double gqa8 = mha / 8, mqa = mha / 64, mla70 = (512 + 64) * L * 2;
  // 000 §9.1: elements per token and layer, bytes per token (fp16), GiB at fp16, 8 and 4 bits.
  {
    Expected want;
    const std::pair<const char*, double> rows[] = {
        {"MHA (H = 64)", 2 * H * dh}, {"GQA-8", 2 * 8 * dh}, {"MQA", 2 * dh}, {"MLA-shaped", 512 + 64}};
    for (const auto& [label, el] : rows) {
      const double b = el * L * 2;
      want[label] = {{1, el}, {2, b}, {3, b * ctx / kGiBd}, {4, b * ctx / kGiBd / 2}, {5, b * ctx / kGiBd / 4},
                     {6, 2 * H * dh / el}};
    }
    out.push_back({"000-9.1", "000 §9.1", std::move(want)});
  }
  // 000 §4.1: the routes on the same shape. int4 (KIVI, G = 128): 4 bits + a 16-bit scale and a
  // 16-bit zero point per 128 elements = 4.25 bits per element.
  {
    Expected want;
    const std::pair<const char*, double> rows[] = {
        {"MHA (baseline)", mha}, {"MQA", mqa}, {"GQA-8", gqa8}, {"MLA", mla70}, {"CLA-2 on GQA-8", gqa8 / 2},
        {"sliding window on GQA-8", gqa8}, {"int4 (KIVI) on GQA-8", gqa8 / 2 * 4.25 / 8},
        {"PagedAttention on GQA-8", gqa8}};
    for (const auto& [label, b] : rows) want[label] = {{2, b}, {3, b * ctx / kGiBd}, {4, mha / b}};
    out.push_back({"000-4.1", "000 §4.1", std::move(want)});
  }
  // 003 after Q7: each technique against the MHA of its own model (deepseek-v2: 60 layers,
  // 128 heads × 128; its MLA bytes from data/facts.md).
  {
    const double ds_mha = 2.0 * 60 * 128 * 128 * 2, ds = static_cast<double>(facts_bytes("deepseek-v2"));
    Expected want;
    want["GQA"] = {{3, gqa8}, {4, mha}, {5, mha / gqa8}};
    want["MLA"] = {{3, ds}, {4, ds_mha}, {5, ds_mha / ds}};
    want["CLA-2 alone"] = {{3, mha / 2}, {4, mha}, {5, 2}};
    want["CLA-2 + GQA-8"] = {{3, gqa8 / 2}, {4, mha}, {5, 16}};
    out.push_back({"003-Q7", "003 after Q7", std::move(want)});
  }
  // 000 §9.3: 8 × 80 GB, 70e9 fp16 weights, the drafts above.
  const double seq = static_cast<double>(facts_bytes("llama-3-70b")) * ctx;
  const double eagle = kEagle;
  {
    Expected want;
    const std::pair<const char*, double> rows[] = {
        {"70B alone", 0.0}, {"+ vanilla SD draft, 7B fp16", 2 * premises::kDraftParams7b}, {"+ EAGLE head (1 layer + fusion)", 2 * eagle}};
    for (const auto& [label, draft] : rows) {
      const double weights = 2 * 70e9 + draft, left = 640e9 - weights;
      want[label] = {{1, weights / 1e9}, {2, left / 1e9}, {3, seq / 1e9}, {4, std::floor((400e9 - draft) / seq)},
                     {5, std::floor(left / seq)}};
    }
    out.push_back({"000-9.3", "000 §9.3, §2.3", std::move(want)});
  }
  out.push_back(closed_form_004_2_5());
  return out;
}

}  // namespace

std::map<std::string, CheatTable> cheatsheet_tables(const CheatTableSource& source) {
  std::map<std::string, CheatTable> tables;
  for (const char* name : {"000-2.2", "000-9.1", "000-4.1", "003-Q7", "000-9.3", "004-2.5"})
    tables.emplace(name, source ? source(name) : cheatsheet_entry(name).build({}));
  return tables;
}

std::vector<Expectation> judge_cheatsheet_tables(const std::map<std::string, CheatTable>& tables) {
  std::vector<Expectation> rows;
  for (const TableWant& t : closed_forms()) {
    const Tally tally = compare(tables.at(t.name), t.want);
    rows.push_back({fmt::format("cheatsheet {}: cells that differ from the closed form, of {}", t.name, tally.cells),
                    t.source, "cells", 0.0, 0.0, "each cell within 1e-9 relative (integers exact): a count, exact",
                    static_cast<double>(tally.wrong), std::nullopt, "", "(table body missing from the text)"});
    if (t.name != "000-9.3") continue;
    rows.push_back({"memory a vanilla SD draft adds, 7B fp16", "000 §9.3", "GB", 2 * premises::kDraftParams7b / 1e9,
                    0.0, "7e9 × 2 B: exact in float64", number(tables.at("000-9.3").table.rows.at(1).at(1)) - 140.0,
                    Stated::parse("14", "+14 GB"), ""});
    rows.push_back({"an EAGLE draft head for a 70B target, fp16 (1 LLaMA-70B layer + the 2d → d fusion)",
                    "000 §9.3", "GB", 2 * kEagle / 1e9, kCellRel * 2 * kEagle / 1e9, "float64 rounding: 1e-9 relative",
                    number(tables.at("000-9.3").table.rows.at(2).at(1)) - 140.0,
                    Stated::parse("200", "EAGLE 的 draft head 只 ~200 MB", 1e-3).flags("E11"),
                    fmt::format("(2d² + 2d·1024 + 3d·28672 + 2d·d) × 2 B = {:.0f} × 2 B at d = 8192: ≈ 1.98 GB, ten times "
                                "the document's figure (E11)", kEagle)});
  }
  return rows;
}

Table cheatsheet_summary(const std::map<std::string, CheatTable>& tables) {
  Table summary{"cheatsheet tables judged cell by cell against closed forms (ctx 4096, batch 1)",
                {"table", "source", "cells compared", "cells that differ", "first difference"}, {}};
  for (const TableWant& t : closed_forms()) {
    const Tally tally = compare(tables.at(t.name), t.want);
    summary.rows.push_back({t.name, t.source, std::int64_t{tally.cells}, std::int64_t{tally.wrong},
                            tally.wrong ? tally.first_wrong : std::string("—")});
  }
  return summary;
}

}  // namespace kvlab::checks

#include "errata_command.hpp"

#include <algorithm>
#include <map>
#include <ostream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "errata/catalogue.hpp"
#include "report/lang.hpp"
#include "report/writers.hpp"

namespace kvlab::app {
namespace {

std::string kind_name(const std::string& kind, Lang lang) {
  static const std::map<std::string, std::string> zh = {
      {"error", "错误"},      {"units", "单位"},        {"convention", "约定"}, {"rounding", "取整"}, {"ambiguous", "歧义"},
      {"imprecise", "不精确"}, {"citation", "引文"}, {"notation", "记号"},   {"code", "代码"}};
  if (lang == Lang::en) return kind;
  const auto it = zh.find(kind);
  return it == zh.end() ? kind : it->second;
}

/// The entries flags.ids names, in the catalogue's order; every entry when none is named.
std::vector<Erratum> selected(const std::vector<Erratum>& all, const std::vector<std::string>& ids) {
  if (ids.empty()) return all;
  for (const auto& id : ids)
    if (std::none_of(all.begin(), all.end(), [&](const Erratum& e) { return e.id == id; }))
      throw InputError(fmt::format("--id: no erratum '{}' (the catalogue has {} … {}; `kvlab errata` lists them)",
                                   printable(id, 20), all.front().id, all.back().id));
  std::vector<Erratum> out;
  for (const auto& e : all)
    if (std::find(ids.begin(), ids.end(), e.id) != ids.end()) out.push_back(e);
  return out;
}

/// "12 errors, 2 units, …" over the kinds present, in erratum_kinds() order.
std::string kind_counts(const std::vector<Erratum>& entries, Lang lang) {
  std::string s;
  for (const auto& k : erratum_kinds()) {
    const auto n = std::count_if(entries.begin(), entries.end(), [&](const Erratum& e) { return e.kind == k; });
    if (n == 0) continue;
    if (!s.empty()) s += tr(lang, ", ", "，");
    s += fmt::format("{} {}", kind_name(k, lang), n);
  }
  return s;
}

std::string flagged_text(const Erratum& e, Lang lang) {
  if (e.flagged_by.empty()) return std::string(tr(lang, "no ERRATUM line", "无勘误行"));
  return fmt::format("{}{}", tr(lang, "ERRATUM line of ", "勘误行来自 "), fmt::join(e.flagged_by, ", "));
}

void write_text(const std::vector<Erratum>& entries, std::size_t total, Lang lang, std::ostream& out) {
  const auto flagged = std::count_if(entries.begin(), entries.end(), [](const Erratum& e) { return !e.flagged_by.empty(); });
  if (entries.size() == total) {
    out << fmt::format(fmt::runtime(tr(lang, "kvlab's errata of the course documents: {} entries ({}).\n",
                                       "kvlab 发现的课程文档勘误：共 {} 条（{}）。\n")),
                       entries.size(), kind_counts(entries, lang));
    out << fmt::format(fmt::runtime(tr(lang,
                                       "{} are flagged by a check's ERRATUM line (`kvlab all --full | grep ERRATUM`); "
                                       "\"convention\" and \"rounding\" are not mistakes.\n",
                                       "其中 {} 条由检查的勘误行标出（`kvlab all --full --lang zh | grep 勘误`）；"
                                       "“约定”和“取整”不算错误。\n")),
                       flagged);
    out << tr(lang,
              "Precision: an exact figure must round to what is written (± half a unit of its last digit); one "
              "marked ≈, 约, ~, 大概, 往往 or about may also be truncated (up to one full unit above).\n\n",
              "精度：精确的数字须四舍五入后等于所写（末位的 ± 半个单位）；带 ≈、约、~、大概、往往、about 的"
              "近似数也可能是截断的（向上最多一个整单位）。\n\n");
  }
  const std::vector<std::string> labels = {
      std::string(tr(lang, "document", "文档原文")), std::string(tr(lang, "kvlab", "kvlab")),
      std::string(tr(lang, "arithmetic", "计算")),   std::string(tr(lang, "why", "说明")),
      std::string(tr(lang, "convention", "约定")),   std::string(tr(lang, "command", "命令"))};
  std::size_t width = 0;
  for (const auto& l : labels) width = std::max(width, display_width(l));
  const auto line = [&](const std::string& label, const std::string& text) {
    out << "  " << label << std::string(width + 2 - display_width(label), ' ') << text << '\n';
  };
  const std::string indent(width + 4, ' ');
  for (const auto& e : entries) {
    out << fmt::format("{}  {} · {} · {}\n", e.id, e.source, kind_name(e.kind, lang), flagged_text(e, lang));
    line(labels[0], e.document);
    if (lang == Lang::en) out << indent << e.document_en << '\n';
    line(labels[1], lang == Lang::zh ? e.kvlab_zh : e.kvlab);
    line(labels[2], e.arithmetic);
    line(labels[3], lang == Lang::zh ? e.why_zh : e.why);
    if (!e.convention.empty()) line(labels[4], lang == Lang::zh ? e.convention_zh : e.convention);
    line(labels[5], e.command);
    out << '\n';
  }
}

void write_md(const std::vector<Erratum>& entries, Lang lang, std::ostream& out) {
  out << tr(lang, "| id | source | kind | document | kvlab | arithmetic | why | command |\n",
            "| 编号 | 出处 | 类别 | 文档原文 | kvlab | 计算 | 说明 | 命令 |\n");
  out << "|---|---|---|---|---|---|---|---|\n";
  for (const auto& e : entries) {
    const std::string doc = lang == Lang::en ? e.document + " (" + e.document_en + ")" : e.document;
    // The why, and the convention under which the document's figure is right, when it has one.
    std::string why = lang == Lang::zh ? e.why_zh : e.why;
    const std::string& convention = lang == Lang::zh ? e.convention_zh : e.convention;
    if (!convention.empty()) why += std::string(tr(lang, " Convention: ", " 约定：")) + convention;
    out << fmt::format("| {} | {} | {} | {} | {} | {} | {} | `{}` |\n", e.id, md_escape(e.source),
                       kind_name(e.kind, lang), md_escape(doc), md_escape(lang == Lang::zh ? e.kvlab_zh : e.kvlab),
                       md_escape(e.arithmetic), md_escape(why), md_escape(e.command));
  }
}

void write_json(const std::vector<Erratum>& entries, Lang lang, std::ostream& out) {
  nlohmann::ordered_json j;
  j["lang"] = std::string(lang_code(lang));
  j["errata"] = nlohmann::ordered_json::array();
  for (const auto& e : entries) {
    nlohmann::ordered_json x;
    x["id"] = e.id;
    x["source"] = e.source;
    x["document"] = e.document;
    x["kvlab"] = lang == Lang::zh ? e.kvlab_zh : e.kvlab;
    x["arithmetic"] = e.arithmetic;
    x["command"] = e.command;
    x["document_en"] = e.document_en;
    x["kind"] = e.kind;
    x["mistake"] = !erratum_kind_is_fair(e.kind);
    x["why"] = lang == Lang::zh ? e.why_zh : e.why;
    if (!e.convention.empty()) x["convention"] = lang == Lang::zh ? e.convention_zh : e.convention;
    x["flagged_by"] = e.flagged_by;
    j["errata"].push_back(std::move(x));
  }
  out << j.dump(2) << '\n';
}

}  // namespace

CLI::App* add_errata_command(CLI::App& app, ErrataFlags& f) {
  auto* sub = app.add_subcommand("errata", "Every erratum kvlab knows in the course documents, with the arithmetic");
  sub->footer(
      "Each entry: its id (E1 …), the section, the document's words (Chinese, and English), the right\n"
      "figure, the arithmetic, the kind, and a kvlab command that shows it. Kinds: error (a wrong figure\n"
      "or fact), units (right figure, wrong unit), convention (right under a convention the document does\n"
      "not state), rounding (a rounding the document is entitled to), ambiguous (right for one reading),\n"
      "imprecise (true only in part), citation (a paper misquoted), notation, code (a bug in its code).\n"
      "An entry's first line names the checks that print it as an ERRATUM line at their defaults\n"
      "(`kvlab all --full | grep ERRATUM`); JSON: \"flagged_by\".\n"
      "Precision rule: an exact figure must round to what is written (± half a unit of its last digit);\n"
      "one marked approximate (≈, 约, ~, 大概, 往往, about) may also be truncated: up to one full unit above.\n"
      "The same list, with more detail: docs/claims.md, \"Document errata\".");
  sub->add_option("--format", f.format, "text (default), json or md")->check(CLI::IsMember({"text", "json", "md"}));
  sub->add_option("--lang", f.lang, "en or zh (default: KVLAB_LANG, else en)");
  sub->add_option("--id", f.ids, "Only these entries (repeatable, or comma-separated): E3, E31, …")
      ->delimiter(',')
      ->type_name("ID");
  return sub;
}

int run_errata(const ErrataFlags& flags, std::ostream& out) {
  const Lang lang = resolve_lang(flags.lang);
  const std::vector<Erratum> all = load_errata();
  if (all.empty()) throw InputError("errata.json: the catalogue has no entries");
  const std::vector<Erratum> entries = selected(all, flags.ids);
  if (flags.format == "json") write_json(entries, lang, out);
  else if (flags.format == "md") write_md(entries, lang, out);
  else write_text(entries, all.size(), lang, out);
  return 0;
}

}  // namespace kvlab::app

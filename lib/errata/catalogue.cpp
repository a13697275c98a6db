#include "errata/catalogue.hpp"

#include <algorithm>
#include <fstream>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "io/data_dir.hpp"

namespace kvlab {

const std::vector<std::string>& erratum_kinds() {
  static const std::vector<std::string> kinds = {"error",     "units",    "convention", "rounding", "ambiguous",
                                                 "imprecise", "citation", "notation",   "code"};
  return kinds;
}

bool erratum_kind_is_fair(const std::string& kind) { return kind == "convention" || kind == "rounding"; }

namespace {

std::string text_field(const nlohmann::json& entry, const char* field, const std::string& where, bool required) {
  const auto it = entry.find(field);
  if (it == entry.end()) {
    if (!required) return "";
    throw InputError(fmt::format("{}: {}: missing (a one-line string is required)", where, field));
  }
  if (!it->is_string()) throw InputError(fmt::format("{}: {}: must be a string", where, field));
  std::string s = it->get<std::string>();
  if (required && s.empty()) throw InputError(fmt::format("{}: {}: must not be empty", where, field));
  if (s.find('\n') != std::string::npos) throw InputError(fmt::format("{}: {}: must be one line", where, field));
  return s;
}

}  // namespace

std::vector<Erratum> load_errata(const std::string& path) {
  const std::string file = path.empty() ? data_dir() + "/errata.json" : path;
  const std::string shown = printable(file);
  std::ifstream in(file, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot open the errata catalogue", shown));
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("{}: not valid JSON: {}", shown, e.what()));
  }
  if (!j.is_object() || !j.contains("errata") || !j["errata"].is_array())
    throw InputError(fmt::format("{}: must be an object {{\"errata\": [...]}}", shown));
  std::vector<Erratum> out;
  std::set<std::string> ids;
  for (std::size_t i = 0; i < j["errata"].size(); ++i) {
    const auto& x = j["errata"][i];
    std::string where = fmt::format("{}: errata[{}]", shown, i);
    if (!x.is_object()) throw InputError(where + ": must be an object");
    Erratum e;
    e.id = text_field(x, "id", where, true);
    where += " (" + printable(e.id, 20) + ")";
    if (e.id.size() < 2 || e.id[0] != 'E' ||
        !std::all_of(e.id.begin() + 1, e.id.end(), [](char c) { return c >= '0' && c <= '9'; }))
      throw InputError(where + ": id: must be E followed by digits, e.g. E12");
    if (!ids.insert(e.id).second) throw InputError(where + ": id: appears twice");
    e.source = text_field(x, "source", where, true);
    e.kind = text_field(x, "kind", where, true);
    const auto& kinds = erratum_kinds();
    if (std::find(kinds.begin(), kinds.end(), e.kind) == kinds.end())
      throw InputError(fmt::format("{}: kind: must be one of {} (got '{}')", where, fmt::join(kinds, ", "),
                                   printable(e.kind, 40)));
    e.document = text_field(x, "document", where, true);
    e.document_en = text_field(x, "document_en", where, true);
    e.kvlab = text_field(x, "kvlab", where, true);
    e.kvlab_zh = text_field(x, "kvlab_zh", where, true);
    e.arithmetic = text_field(x, "arithmetic", where, true);
    e.why = text_field(x, "why", where, true);
    e.why_zh = text_field(x, "why_zh", where, true);
    e.convention = text_field(x, "convention", where, false);
    e.convention_zh = text_field(x, "convention_zh", where, !e.convention.empty());
    e.command = text_field(x, "command", where, true);
    if (e.command.rfind("kvlab ", 0) != 0)
      throw InputError(where + ": command: must be a kvlab command line, e.g. \"kvlab kv-size\"");
    if (const auto it = x.find("flagged_by"); it != x.end()) {
      if (!it->is_array()) throw InputError(where + ": flagged_by: must be an array of check names");
      for (const auto& c : *it) {
        if (!c.is_string() || c.get<std::string>().empty())
          throw InputError(where + ": flagged_by: must be an array of check names");
        e.flagged_by.push_back(c.get<std::string>());
      }
    }
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace kvlab

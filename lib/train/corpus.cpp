#include "train/corpus.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "core/error.hpp"

namespace kvlab::train {

namespace fs = std::filesystem;

namespace {

bool blank(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; });
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

std::vector<std::string> split_fortunes(const std::string& text) {
  std::vector<std::string> out;
  std::string current;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t nl = text.find('\n', pos);
    const std::size_t end = nl == std::string::npos ? text.size() : nl + 1;
    const std::string line = text.substr(pos, end - pos);
    if (line == "%\n" || line == "%") {
      if (!blank(current)) out.push_back(current);
      current.clear();
    } else {
      current += line;
    }
    pos = end;
  }
  if (!blank(current)) out.push_back(current);
  return out;
}

std::optional<Corpus> load_fortunes(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return std::nullopt;
  std::vector<std::string> names;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    // Regular files only: off/ is a directory, and a FIFO or a device would block or never end.
    if (it->is_symlink(ec) || !it->is_regular_file(ec)) continue;
    const std::string name = it->path().filename().string();
    if (ends_with(name, ".dat") || ends_with(name, ".u8")) continue;
    names.push_back(name);
  }
  if (ec) return std::nullopt;
  std::sort(names.begin(), names.end());
  if (names.empty()) return std::nullopt;

  Corpus c;
  std::size_t index = 0, total = 0;
  for (const auto& name : names) {
    const fs::path path = fs::path(dir) / name;
    const std::string shown = printable(path.string());
    const auto size = fs::file_size(path, ec);
    if (ec) throw InputError(fmt::format("{}: cannot read: {}", shown, ec.message()));
    if (size > kMaxFortunesBytes - total)
      throw InputError(fmt::format("{}: the fortune files hold more than {} bytes, the budget of the training "
                                   "text (Debian's fortunes: about 2.6 MB)", printable(dir), kMaxFortunesBytes));
    std::ifstream in(path, std::ios::binary);
    if (!in) throw InputError(fmt::format("{}: cannot read: {}", shown, std::strerror(errno)));
    std::ostringstream ss;
    ss << in.rdbuf();
    if (in.bad()) throw InputError(fmt::format("{}: read error", shown));
    const std::string text = ss.str();
    if (text.size() > kMaxFortunesBytes - total)
      throw InputError(fmt::format("{}: the fortune files hold more than {} bytes, the budget of the training "
                                   "text (Debian's fortunes: about 2.6 MB)", printable(dir), kMaxFortunesBytes));
    total += text.size();
    for (const auto& fortune : split_fortunes(text)) {
      const bool validation = index % 10 == 9;
      auto& dst = validation ? c.validation : c.train;
      for (unsigned char b : fortune) dst.push_back(b);
      dst.push_back('%');
      dst.push_back('\n');
      ++(validation ? c.n_fortunes_validation : c.n_fortunes_train);
      ++index;
    }
    c.files.push_back(name);
  }
  return c;
}

std::string fortunes_skip_line(const std::string& dir) {
  return fmt::format("skipped: the training text {} is absent (install Debian's `fortunes` package)", dir);
}

std::uint64_t corpus_hash(const std::vector<int>& tokens) {
  std::uint64_t h = kFnv1aOffsetBasis;
  for (int t : tokens) {
    h ^= static_cast<std::uint8_t>(t);
    h *= kFnv1aPrime;
  }
  return h;
}

}  // namespace kvlab::train

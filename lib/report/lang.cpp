#include "report/lang.hpp"

#include <cstdlib>
#include <string>

#include <utf8proc.h>

#include "core/error.hpp"

namespace kvlab {

Lang parse_lang(std::string_view text, std::string_view field) {
  const std::string_view code = text.substr(0, text.find_first_of("-_."));
  if (code == "en" || code == "C" || code == "POSIX") return Lang::en;
  if (code == "zh") return Lang::zh;
  throw InputError(std::string(field) + ": must be en or zh (got '" + std::string(text) + "')");
}

Lang resolve_lang(const std::optional<std::string>& flag) {
  if (flag) return parse_lang(*flag, "--lang");
  const char* env = std::getenv("KVLAB_LANG");
  if (env && *env) return parse_lang(env, "KVLAB_LANG");
  return Lang::en;
}

std::string_view lang_code(Lang lang) { return lang == Lang::zh ? "zh" : "en"; }

namespace {

// The next code point of `text` at `i` and its length in bytes; an invalid byte is one
// code point of width 1 (utf8proc_iterate returns a negative length).
std::pair<utf8proc_int32_t, std::size_t> next_code_point(std::string_view text, std::size_t i) {
  utf8proc_int32_t cp = 0;
  const auto n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(text.data() + i),
                                  static_cast<utf8proc_ssize_t>(text.size() - i), &cp);
  if (n <= 0) return {-1, 1};
  return {cp, static_cast<std::size_t>(n)};
}

std::size_t code_point_width(utf8proc_int32_t cp) {
  if (cp < 0) return 1;
  const int w = utf8proc_charwidth(cp);
  return w < 0 ? 0 : static_cast<std::size_t>(w);
}

}  // namespace

std::string count_noun(std::size_t n, std::string_view noun) {
  return std::to_string(n) + " " + std::string(noun) + (n == 1 ? "" : "s");
}

std::size_t display_width(std::string_view text) {
  std::size_t width = 0;
  for (std::size_t i = 0; i < text.size();) {
    const auto [cp, len] = next_code_point(text, i);
    width += code_point_width(cp);
    i += len;
  }
  return width;
}

std::string fit_width(std::string_view text, std::size_t width) {
  if (display_width(text) <= width) return std::string(text);
  if (width == 0) return {};
  std::string out;
  std::size_t used = 0;
  for (std::size_t i = 0; i < text.size();) {
    const auto [cp, len] = next_code_point(text, i);
    const std::size_t w = code_point_width(cp);
    if (used + w + 1 > width) break;  // leave one column for the ellipsis
    out.append(text.substr(i, len));
    used += w;
    i += len;
  }
  return out + "…";
}

std::string terminal_safe(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size();) {
    const auto [cp, n] = next_code_point(text, i);
    const bool control = cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp < 0xa0);  // cp < 0: an invalid byte
    out += control ? std::string("?") : std::string(text.substr(i, n));
    i += n;
  }
  return out;
}

}  // namespace kvlab

// The language of kvlab's reader-facing text, and the width of that text in a terminal.
//
// The course is written in Chinese; `--lang zh` (or KVLAB_LANG=zh) gives the summary, `all`,
// `errata`, `selftest` and each check's headline in Chinese, in the documents' own terms.
// Tables align by terminal display width (utf8proc), so a Chinese word takes two columns.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace kvlab {

enum class Lang { en, zh };

/// "en" or "zh" (also "zh-CN", "zh_CN.UTF-8", "en_US"…: the part before '-', '_' or '.').
/// Throws InputError naming `field` and the allowed values otherwise.
Lang parse_lang(std::string_view text, std::string_view field = "--lang");

/// The language to use: `flag` when given, else KVLAB_LANG when set and non-empty, else English.
/// Throws InputError when either names a language kvlab does not have.
Lang resolve_lang(const std::optional<std::string>& flag);

/// "en" or "zh".
std::string_view lang_code(Lang lang);

/// `en` or `zh` by `lang`: the one place a reader-facing string picks its language.
inline std::string_view tr(Lang lang, std::string_view en, std::string_view zh) {
  return lang == Lang::zh ? zh : en;
}

/// `n` and `noun` in English: "1 question", "3 questions" (the plural adds an s).
std::string count_noun(std::size_t n, std::string_view noun);

/// Columns `text` (UTF-8) takes in a terminal: East Asian wide characters take two, combining
/// marks none (utf8proc's character width). Invalid UTF-8 bytes count one column each.
std::size_t display_width(std::string_view text);

/// `text` cut to at most `width` display columns, ending in "…" when it was cut.
std::string fit_width(std::string_view text, std::size_t width);

/// `text` with each control character (C0, DEL, C1: a newline, a carriage return, an escape
/// sequence's ESC) and each invalid UTF-8 byte replaced by '?': one line that can neither break
/// nor recolour the terminal, whatever a user typed. Valid UTF-8 (中文, ×, ≤) is kept.
std::string terminal_safe(std::string_view text);

}  // namespace kvlab

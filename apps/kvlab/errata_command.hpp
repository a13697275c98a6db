// `kvlab errata`: every erratum kvlab knows in the course documents (lib/errata/catalogue.hpp,
// data/errata.json), each with the document's words, the right figure, the arithmetic, what kind
// of slip it is (or the convention it is right under), and a command that shows it.
//
//   kvlab errata                      all entries, English labels
//   kvlab errata --lang zh            the same in Chinese
//   kvlab errata --id E3 --id E31     only these entries
//   kvlab errata --format json        {"errata": [{"id", "source", "document", "kvlab", "arithmetic", "command", …}]}
#pragma once

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace kvlab::app {

struct ErrataFlags {
  std::string format = "text";      ///< text, json or md
  std::optional<std::string> lang;  ///< en or zh; unset: KVLAB_LANG, else en (report/lang.hpp)
  std::vector<std::string> ids;     ///< --id E3 (repeatable, or E3,E4); empty: every entry
};

/// Adds the `errata` subcommand with its options bound to `flags`.
CLI::App* add_errata_command(CLI::App& app, ErrataFlags& flags);

/// Writes the catalogue (or the entries flags.ids names) to `out` in flags.format and returns 0.
/// Throws InputError for an unknown id, a language kvlab does not have, or an unreadable catalogue.
int run_errata(const ErrataFlags& flags, std::ostream& out);

}  // namespace kvlab::app

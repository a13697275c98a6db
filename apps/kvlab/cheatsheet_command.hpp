// `kvlab cheatsheet`: the course documents' numeric tables, computed by the library
// (checks/cheatsheet), all in document order or only the ones named; --list names them.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace kvlab::app {

struct CheatsheetFlags {
  std::vector<std::string> tables;     ///< positional names; empty: every table
  std::string format = "text";         ///< text, md, csv or json
  bool list = false;                   ///< print the table names with their sources
  std::optional<std::int64_t> ctx;     ///< --ctx
  std::optional<std::int64_t> batch;   ///< --batch
  std::optional<std::string> kv_dtype; ///< --kv-dtype
  std::optional<std::string> gpu;      ///< --gpu
};

/// Adds the `cheatsheet` subcommand with its options bound to `flags` (validators: ranges of
/// checks/cheatsheet, the cache dtypes, the catalogue's GPUs, the table names).
CLI::App* add_cheatsheet_command(CLI::App& app, CheatsheetFlags& flags);

/// Prints the tables (or, with flags.list, the list of tables) to `out`; returns 0. Throws
/// InputError for an unknown table or an override out of range (naming the option).
int run_cheatsheet(const CheatsheetFlags& flags, std::ostream& out);

}  // namespace kvlab::app

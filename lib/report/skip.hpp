// Skipped results: a check that cannot run here (its trained checkpoint or the fortunes text is
// absent; issue 10) returns a Result with no expectations whose first note is "skipped: <why>".
// Its verdict is "skipped" (JSON status "skipped"), it exits 0, and Result::passed() is true, so
// `kvlab all` and ctest do not fail on a machine without the data. Kept out of result.hpp so that
// adding it did not rebuild every check; a field in Result would be the cleaner home.
#pragma once

#include <string>

#include "report/result.hpp"

namespace kvlab {

inline constexpr const char* kSkippedPrefix = "skipped: ";

/// Marks `r` skipped with the one-line reason `why` (clears its expectations).
inline void mark_skipped(Result& r, const std::string& why) {
  r.expectations.clear();
  r.notes.insert(r.notes.begin(), kSkippedPrefix + why);
}

/// True when `r` was marked by mark_skipped.
inline bool is_skipped(const Result& r) {
  return r.expectations.empty() && !r.notes.empty() && r.notes.front().rfind(kSkippedPrefix, 0) == 0;
}

/// The reason given to mark_skipped ("" when not skipped).
inline std::string skip_reason(const Result& r) {
  return is_skipped(r) ? r.notes.front().substr(std::string(kSkippedPrefix).size()) : std::string();
}

}  // namespace kvlab

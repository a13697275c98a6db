// The rule of every option that names a file or folder to read (--weights, --draft-weights,
// --fortunes, --config, --text, ...). Its own header, beside options.hpp, so that the checks that
// take no path do not depend on it.
#pragma once

#include "framework/options.hpp"

namespace kvlab::checks {

/// Accepts any text but the empty one. `--weights ''` (or `--weights "$UNSET"`) is refused with
/// one line naming the option, exit 2, instead of being read as "no file", which ran the check on
/// its default model as if the option had not been given. Implemented in options.cpp.
Validator PathGiven();

}  // namespace kvlab::checks

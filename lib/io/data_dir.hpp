// Where kvlab's data lives (the model and GPU catalogue, traces, the trained pair's weights).
#pragma once

#include <string>

namespace kvlab {

/// The catalogue folder: $KVLAB_DATA when set; else the source tree's data/ (fixed at build time)
/// when it exists; else the nearest data/ above the executable (a clone moved after building).
/// Never throws; a folder that does not exist is named by the error of whoever reads from it.
std::string data_dir();

}  // namespace kvlab

#include "io/data_dir.hpp"

#include <cstdlib>
#include <filesystem>

namespace kvlab {

std::string data_dir() {
  if (const char* env = std::getenv("KVLAB_DATA"); env && *env) return env;
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(KVLAB_DATA_DIR, ec)) return KVLAB_DATA_DIR;
  // The source tree moved since the build: look beside the executable (build/bin/kvlab -> data/).
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec)
    for (fs::path dir = exe.parent_path(); !dir.empty() && dir != dir.parent_path(); dir = dir.parent_path())
      if (fs::is_directory(dir / "data" / "models", ec)) return (dir / "data").string();
  return KVLAB_DATA_DIR;  // the error that follows names this path
}

}  // namespace kvlab

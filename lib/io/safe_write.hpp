// Safe output files: every file kvlab writes (--out of train and model init, machine --save, --plot,
// train --loss-log, weights files) goes through this module.
//
// A target appears only when its bytes are complete: kvlab writes a unique temporary in the
// target's directory (".kvlab-XXXXXXXXXXXX.tmp", safe characters only, created with O_EXCL so two
// writers of one path never share it), fsyncs it and renames it onto the target. Before that the
// target is neither created nor truncated, so an error, a full disk or Ctrl-C leaves the old file
// (or no file) and no temporary: temporaries are removed on failure, by the destructor, and on
// SIGINT, SIGTERM and SIGHUP (a signal-safe registry of live temporaries; the handler then hands
// the signal to the action that was there before, by default death; an ignored signal stays ignored).
//
// Targets: a path that does not exist yet, a regular file, or a symbolic link to a regular file
// (kvlab writes through the link: the link stays and the file it resolves to is replaced). Anything
// else that exists (a directory, a device such as /dev/null or /dev/full, a FIFO, a socket, a
// dangling link) is refused before any work. A replaced file keeps its permission bits; a new one
// gets 0666 less the umask, as a plain open would.
//
// Errors are InputError (exit status 2), one line: "<flag>: cannot write '<path>': <reason>", the
// flag as the user typed it ("--out", "--plot", ...) and the path as typed (control characters and
// bytes that are not UTF-8 shown as '?'). Without a flag the line starts at "cannot write".
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace kvlab {

/// `path` for an error message: valid UTF-8 kept as typed; control characters (C0, DEL, C1) and
/// bytes that are not UTF-8 become '?', so a message stays one line and carries no terminal
/// escapes; cut to `max` bytes plus "...".
std::string shown_path(const std::string& path, std::size_t max = 200);

/// An output option's target after checking it (check_output_target).
struct OutputTarget {
  std::string flag;      ///< the option, e.g. "--out" ("" when none)
  std::string typed;     ///< the path as given
  std::string resolved;  ///< the file that will be replaced: `typed`, or a symlink's resolved target
};

/// Checks that `path` can be written as the output of `flag`, without creating or changing it:
/// non-empty, not a directory, device, FIFO, socket or dangling link, its directory exists, and a
/// temporary can be created there (one is made and removed at once). Throws InputError naming
/// `flag` and the path otherwise. Used before long work so that it does not end in a refusal.
OutputTarget check_output_target(const std::string& path, const std::string& flag);

/// Throws InputError "<flag1>, <flag2>: both name '<path>'; ..." when two targets are one file
/// (same resolved path, or the same device and inode when the file exists), e.g.
/// `train --loss-log X --out X`.
void require_distinct_outputs(const std::vector<OutputTarget>& targets);

/// One output file being written: a temporary in the target's directory until commit() renames
/// it onto the target. The destructor (and SIGINT/SIGTERM/SIGHUP) removes an uncommitted
/// temporary. Not copyable; one thread writes it.
class SafeWriter {
 public:
  /// Checks `path` (as check_output_target) and creates the temporary. Throws InputError.
  SafeWriter(const std::string& path, const std::string& flag);
  ~SafeWriter();
  SafeWriter(const SafeWriter&) = delete;
  SafeWriter& operator=(const SafeWriter&) = delete;

  /// Appends `n` bytes. Throws InputError (e.g. "No space left on device", "File too large");
  /// the temporary is removed at once and later writes throw too.
  void write(const void* data, std::size_t n);
  void write(std::string_view text) { write(text.data(), text.size()); }

  /// fsync, close, rename onto the target (and fsync its directory). Throws InputError on any
  /// failure, with the temporary removed and the target untouched.
  void commit();

  /// Removes the temporary now (idempotent); the target is untouched.
  void abandon() noexcept;

  const OutputTarget& target() const { return target_; }

 private:
  [[noreturn]] void fail(const std::string& reason);
  OutputTarget target_;
  std::string temp_;
  int fd_ = -1;
  int slot_ = -1;  ///< registry slot of temp_ (-1: not registered)
  unsigned mode_ = 0;
  bool replace_mode_ = false;  ///< the target exists: give the new file its permission bits
};

/// SafeWriter(path, flag), write(bytes), commit(): the whole file in one call.
void safe_write_file(const std::string& path, std::string_view bytes, const std::string& flag);

/// Standard output, checked: call require_stdout_open() first thing in main (a closed fd 1 is one
/// line on stderr and exit 2, before any file is opened that would take fd 1's place), and
/// stdout_error() after the last write. stdout_error flushes std::cout and stdout and returns ""
/// when every byte got out, else the reason (e.g. "No space left on device").
/// require_stdout_open throws InputError when fd 1 is closed; it also makes a size limit
/// (ulimit -f) an error of write (EFBIG) instead of a fatal SIGXFSZ.
void require_stdout_open();
std::string stdout_error();

}  // namespace kvlab

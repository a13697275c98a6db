#include "io/safe_write.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <mutex>

#include <fmt/format.h>

#include "core/error.hpp"

namespace kvlab {
namespace {

// ---- the registry of live temporaries, emptied by the signal handler ---------------------------
// Fixed storage and lock-free atomics only: the handler may run at any point of a write.

constexpr int kSlots = 64;
constexpr std::size_t kPathBytes = 4096;

struct Slot {
  std::atomic<int> state{0};  // 0 free, 1 being filled or emptied, 2 holds a live temporary
  char path[kPathBytes];
};
Slot g_slots[kSlots];

constexpr int kSignals[3] = {SIGINT, SIGTERM, SIGHUP};
struct sigaction g_previous[3];  // each signal's action before ours: restored, then the signal re-raised

extern "C" void remove_temporaries_and_die(int sig) {
  for (auto& s : g_slots)
    if (s.state.load() == 2) ::unlink(s.path);
  for (int i = 0; i < 3; ++i)
    if (kSignals[i] == sig) ::sigaction(sig, &g_previous[i], nullptr);
  ::raise(sig);  // blocked until this handler returns; then the previous action (default: death)
}

/// Puts remove_temporaries_and_die in front of each signal's action, unless the signal is ignored
/// (nohup: kvlab stays immune) or ours already. Checked at every registration, so a program that
/// set its own handler in between (a test framework, a fork that reset it) is chained too.
void install_handlers() {
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  for (int i = 0; i < 3; ++i) {
    struct sigaction current {};
    if (::sigaction(kSignals[i], nullptr, &current) != 0) continue;
    const bool plain = !(current.sa_flags & SA_SIGINFO);
    if (plain && (current.sa_handler == SIG_IGN || current.sa_handler == remove_temporaries_and_die)) continue;
    g_previous[i] = current;
    struct sigaction act {};
    act.sa_handler = remove_temporaries_and_die;
    sigemptyset(&act.sa_mask);
    act.sa_flags = SA_RESTART;
    ::sigaction(kSignals[i], &act, nullptr);
  }
}

/// Registers `path`; returns its slot, or -1 when the registry is full or the path too long (the
/// temporary is then removed on failure and by the destructor, only not on a signal).
int register_temporary(const std::string& path) {
  install_handlers();
  if (path.size() >= kPathBytes) return -1;
  for (int i = 0; i < kSlots; ++i) {
    int expected = 0;
    if (!g_slots[i].state.compare_exchange_strong(expected, 1)) continue;
    std::memcpy(g_slots[i].path, path.c_str(), path.size() + 1);
    g_slots[i].state.store(2);
    return i;
  }
  return -1;
}

void unregister_temporary(int slot) {
  if (slot >= 0) g_slots[slot].state.store(0);
}

// ---- names and messages ------------------------------------------------------------------------

std::string cannot_write(const std::string& flag, const std::string& path, const std::string& reason) {
  return fmt::format("{}cannot write '{}': {}", flag.empty() ? "" : flag + ": ", shown_path(path), reason);
}

const char* kind_of(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

/// Twelve characters from [a-z0-9], different for each call in this process and, through the
/// pid and the clock, across processes; O_EXCL settles any collision.
std::string random_tag() {
  static std::atomic<std::uint64_t> counter{0};
  std::uint64_t x = static_cast<std::uint64_t>(::getpid()) * 0x9E3779B97F4A7C15ull ^
                    static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
                    (counter.fetch_add(1) + 1) * 0xD1B54A32D192ED03ull;
  std::string tag;
  for (int i = 0; i < 12; ++i) {
    x ^= x >> 31, x *= 0xBF58476D1CE4E5B9ull, x ^= x >> 29;
    tag += "abcdefghijklmnopqrstuvwxyz0123456789"[x % 36];
  }
  return tag;
}

struct Resolved {
  OutputTarget target;
  std::string dir;    ///< the resolved target's directory
  bool exists = false;
  mode_t mode = 0;    ///< the existing file's mode
};

Resolved resolve(const std::string& path, const std::string& flag) {
  const std::string what = flag.empty() ? "a file name" : flag;
  if (path.empty())
    throw InputError(fmt::format("{}: an empty file name (an unset shell variable?); give the file to write",
                                 flag.empty() ? "output" : flag));
  if (path.back() == '/')
    throw InputError(cannot_write(flag, path, fmt::format("ends in '/'; {} takes a file name", what)));
  Resolved r;
  r.target = {flag, path, path};
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (S_ISLNK(st.st_mode)) {
      struct stat to {};
      if (::stat(path.c_str(), &to) != 0)
        throw InputError(cannot_write(flag, path, fmt::format("a symbolic link that leads nowhere ({})",
                                                              std::strerror(errno))));
      if (!S_ISREG(to.st_mode))
        throw InputError(cannot_write(flag, path, fmt::format("a symbolic link to {}; {} writes regular files only",
                                                              kind_of(to.st_mode), what)));
      char* real = ::realpath(path.c_str(), nullptr);
      if (!real) throw InputError(cannot_write(flag, path, std::strerror(errno)));
      r.target.resolved = real;
      std::free(real);
      st = to;
    } else if (!S_ISREG(st.st_mode)) {
      throw InputError(cannot_write(flag, path, fmt::format("{}; {} writes regular files only", kind_of(st.st_mode),
                                                            what)));
    }
    r.exists = true;
    r.mode = st.st_mode & 07777;
  } else if (errno != ENOENT) {
    throw InputError(cannot_write(flag, path, std::strerror(errno)));
  }
  const std::filesystem::path parent = std::filesystem::path(r.target.resolved).parent_path();
  r.dir = parent.empty() ? "." : parent.string();
  struct stat dst {};
  if (::stat(r.dir.c_str(), &dst) != 0)
    throw InputError(cannot_write(flag, path, fmt::format("its directory: {}", std::strerror(errno))));
  if (!S_ISDIR(dst.st_mode)) throw InputError(cannot_write(flag, path, "its directory is not a directory"));
  return r;
}

}  // namespace

std::string shown_path(const std::string& s, std::size_t max) {
  std::string out;
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const std::size_t n = s.size();
  for (std::size_t i = 0; i < n;) {
    if (out.size() >= max) {
      out += "...";
      break;
    }
    const unsigned char c = p[i];
    std::size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    bool ok = len > 0 && i + len <= n;
    std::uint32_t cp = len == 1 ? c : len == 2 ? c & 0x1F : len == 3 ? c & 0x0F : c & 0x07;
    for (std::size_t k = 1; ok && k < len; ++k) {
      ok = (p[i + k] & 0xC0) == 0x80;
      cp = cp << 6 | (p[i + k] & 0x3F);
    }
    // Overlong forms, surrogates and values past U+10FFFF are not UTF-8 either.
    if (ok) ok = !(len == 2 && cp < 0x80) && !(len == 3 && cp < 0x800) && !(len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) &&
                 !(cp >= 0xD800 && cp <= 0xDFFF);
    if (!ok) {
      out += '?';
      ++i;
      continue;
    }
    if (cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp < 0xA0)) out += '?';
    else out.append(s, i, len);
    i += len;
  }
  return out;
}

SafeWriter::SafeWriter(const std::string& path, const std::string& flag) {
  const Resolved r = resolve(path, flag);
  target_ = r.target;
  replace_mode_ = r.exists;
  mode_ = r.mode;
  int err = 0;
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::string name = (r.dir == "/" ? "" : r.dir) + "/.kvlab-" + random_tag() + ".tmp";
    fd_ = ::open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ >= 0) {
      temp_ = std::move(name);
      slot_ = register_temporary(temp_);
      return;
    }
    err = errno;
    if (err != EEXIST) break;
  }
  throw InputError(cannot_write(flag, path, std::strerror(err)));
}

SafeWriter::~SafeWriter() { abandon(); }

void SafeWriter::abandon() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!temp_.empty()) ::unlink(temp_.c_str());
  unregister_temporary(slot_);
  slot_ = -1;
  temp_.clear();
}

void SafeWriter::fail(const std::string& reason) {
  abandon();
  throw InputError(cannot_write(target_.flag, target_.typed, reason));
}

void SafeWriter::write(const void* data, std::size_t n) {
  if (fd_ < 0) fail("the file was already closed or failed");
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t k = ::write(fd_, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) fail(k < 0 ? std::strerror(errno) : "the write made no progress");
    p += k, n -= static_cast<std::size_t>(k);
  }
}

void SafeWriter::commit() {
  if (fd_ < 0) fail("the file was already closed or failed");
  if (::fsync(fd_) != 0 && errno != EINVAL) fail(std::strerror(errno));
  if (replace_mode_ && ::fchmod(fd_, mode_) != 0) fail(std::strerror(errno));
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail(std::strerror(errno));
  if (::rename(temp_.c_str(), target_.resolved.c_str()) != 0) fail(std::strerror(errno));
  unregister_temporary(slot_);
  slot_ = -1;
  const std::filesystem::path parent = std::filesystem::path(temp_).parent_path();
  temp_.clear();
  const int dir = ::open(parent.empty() ? "." : parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {  // the rename itself on disk; a file system that cannot fsync a directory is fine
    (void)::fsync(dir);
    ::close(dir);
  }
}

OutputTarget check_output_target(const std::string& path, const std::string& flag) {
  SafeWriter probe(path, flag);  // the destructor removes the temporary
  return probe.target();
}

void require_distinct_outputs(const std::vector<OutputTarget>& targets) {
  namespace fs = std::filesystem;
  auto same = [](const OutputTarget& a, const OutputTarget& b) {
    struct stat sa {}, sb {};
    if (::stat(a.resolved.c_str(), &sa) == 0 && ::stat(b.resolved.c_str(), &sb) == 0)
      return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    std::error_code ea, eb;
    const fs::path pa = fs::weakly_canonical(fs::absolute(a.resolved, ea), ea);
    const fs::path pb = fs::weakly_canonical(fs::absolute(b.resolved, eb), eb);
    return ea || eb ? a.resolved == b.resolved : pa == pb;
  };
  for (std::size_t i = 0; i < targets.size(); ++i)
    for (std::size_t j = i + 1; j < targets.size(); ++j)
      if (same(targets[i], targets[j]))
        throw InputError(fmt::format("{}, {}: both name the file '{}'; give each output its own file",
                                     targets[i].flag, targets[j].flag, shown_path(targets[j].typed)));
}

void safe_write_file(const std::string& path, std::string_view bytes, const std::string& flag) {
  SafeWriter w(path, flag);
  w.write(bytes);
  w.commit();
}

void require_stdout_open() {
  struct sigaction old {};
  if (::sigaction(SIGXFSZ, nullptr, &old) == 0 && old.sa_handler == SIG_DFL) ::signal(SIGXFSZ, SIG_IGN);
  // A closed fd 0 or 2 would be taken by the next file kvlab opens: park /dev/null there.
  for (int fd : {STDIN_FILENO, STDERR_FILENO})
    if (::fcntl(fd, F_GETFD) == -1 && errno == EBADF) {
      const int null = ::open("/dev/null", fd == STDIN_FILENO ? O_RDONLY : O_WRONLY);
      if (null >= 0 && null != fd) {
        ::dup2(null, fd);
        ::close(null);
      }
    }
  if (::fcntl(STDOUT_FILENO, F_GETFD) == -1 && errno == EBADF)
    throw InputError("standard output is closed; kvlab prints its report there (redirect it to a file or "
                     "/dev/null instead)");
}

std::string stdout_error() {
  errno = 0;
  std::cout.flush();
  int err = errno;
  bool bad = !std::cout;
  if (std::fflush(stdout) != 0) {
    bad = true;
    if (err == 0) err = errno;
  }
  if (std::ferror(stdout)) bad = true;
  if (!bad) return "";
  return err != 0 ? std::strerror(err) : "a write failed";
}

}  // namespace kvlab

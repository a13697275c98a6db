// io/safe_write: output files appear only complete, through a temporary in their directory; targets
// that are not regular files are refused; temporaries never outlive a failure or a signal.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "core/error.hpp"
#include "io/safe_write.hpp"
#include "test_util.hpp"

namespace kvlab::io_safe_write_test {
namespace {

namespace fs = std::filesystem;

/// A fresh directory, removed with everything in it at the end of the scope.
struct TempDir {
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "kvlab-safe-write-XXXXXX").string();
    REQUIRE(::mkdtemp(pattern.data()) != nullptr);
    path = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string operator/(const std::string& name) const { return path + "/" + name; }
  /// The names in the directory, sorted, joined by spaces.
  std::string listing() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(path)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    std::string s;
    for (const auto& n : names) s += (s.empty() ? "" : " ") + n;
    return s;
  }
  std::string path;
};

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void spit(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

std::string write_error(const std::string& path, const std::string& flag) {
  return test::input_error([&] { safe_write_file(path, "new", flag); });
}

TEST_CASE("safe_write: a new file appears only at commit, with exactly the bytes written") {
  TempDir d;
  const std::string target = d / "model.safetensors";
  {
    SafeWriter w(target, "--out");
    w.write("abc");
    CHECK_FALSE(fs::exists(target));  // never created before success
    w.write(std::string(100000, 'x'));
    w.commit();
  }
  CHECK(slurp(target) == "abc" + std::string(100000, 'x'));
  CHECK(d.listing() == "model.safetensors");  // no temporary left
}

TEST_CASE("safe_write: an abandoned or destroyed writer leaves the old file and no temporary") {
  TempDir d;
  const std::string target = d / "keep.txt";
  spit(target, "old");
  spit(d / "keep.txt.tmp", "the user's own file");  // a name the old writer used for its temporary
  {
    SafeWriter w(target, "--out");
    w.write("half of the new fi");
  }  // an exception or an early return: the destructor
  CHECK(slurp(target) == "old");
  CHECK(slurp(d / "keep.txt.tmp") == "the user's own file");
  CHECK(d.listing() == "keep.txt keep.txt.tmp");
  SafeWriter w(target, "--out");
  w.write("x");
  w.abandon();
  CHECK(slurp(target) == "old");
  CHECK(d.listing() == "keep.txt keep.txt.tmp");
}

TEST_CASE("safe_write: a write that fails (file size limit) is one InputError; the old file stays") {
  TempDir d;
  const std::string target = d / "log.tsv";
  spit(target, "old");
  std::signal(SIGXFSZ, SIG_IGN);  // as require_stdout_open does in the CLI: EFBIG, not death
  rlimit old{};
  REQUIRE(::getrlimit(RLIMIT_FSIZE, &old) == 0);
  rlimit small = old;
  small.rlim_cur = 1000;
  REQUIRE(::setrlimit(RLIMIT_FSIZE, &small) == 0);
  std::string msg;
  try {
    safe_write_file(target, std::string(5000, 'y'), "--loss-log");
  } catch (const InputError& e) {
    msg = e.what();
  }
  ::setrlimit(RLIMIT_FSIZE, &old);
  CHECK(msg.rfind("--loss-log: cannot write '", 0) == 0);
  CHECK(msg.find("File too large") != std::string::npos);
  CHECK(msg.find('\n') == std::string::npos);
  CHECK(slurp(target) == "old");
  CHECK(d.listing() == "log.tsv");
}

TEST_CASE("safe_write: targets that are not regular files are refused, naming the flag and the path") {
  TempDir d;
  fs::create_directory(d / "dir.svg");
  REQUIRE(::mkfifo((d / "fifo").c_str(), 0600) == 0);
  fs::create_symlink(d / "nowhere", d / "dangling");
  fs::create_symlink(d / "dir.svg", d / "to-dir");
  // A device node made here (root can), never /dev/null itself: a broken build would replace it.
  const bool device = ::mknod((d / "null").c_str(), S_IFCHR | 0600, ::makedev(1, 3)) == 0;
  std::vector<std::string> bad_targets = {d / "dir.svg", d / "fifo", d / "dangling", d / "to-dir", d / "no/such/dir/x",
                                          d / "name/"};
  if (device) bad_targets.push_back(d / "null");
  for (const std::string& bad : bad_targets) {
    CAPTURE(bad);
    const std::string msg = write_error(bad, "--plot");
    CHECK(msg.rfind("--plot: cannot write '" + bad + "'", 0) == 0);
    CHECK(msg.find('\n') == std::string::npos);
  }
  CHECK(fs::is_fifo(d / "fifo"));  // untouched, not replaced by a regular file
  CHECK(fs::is_symlink(d / "dangling"));
  if (device) {
    CHECK(fs::is_character_file(d / "null"));
    CHECK(write_error(d / "null", "--out").find("a character device") != std::string::npos);
  }
  CHECK(write_error("", "--out").rfind("--out: an empty file name", 0) == 0);  // an unset shell variable
  CHECK(write_error(d / "dir.svg", "--plot").find("a directory") != std::string::npos);
  CHECK(d.listing() == std::string("dangling dir.svg fifo ") + (device ? "null " : "") + "to-dir");  // no probe left
  // check_output_target refuses the same, and creates nothing for a good one
  CHECK(test::input_error([&] { check_output_target(d / "fifo", "--out"); }).find("--out") != std::string::npos);
  CHECK(check_output_target(d / "new.txt", "--out").resolved == d / "new.txt");
  CHECK_FALSE(fs::exists(d / "new.txt"));
}

TEST_CASE("safe_write: a symlink to a regular file is written through; the link stays") {
  TempDir d;
  fs::create_directory(d / "real");
  spit(d / "real/file.json", "old");
  fs::create_symlink(d / "real/file.json", d / "link.json");
  safe_write_file(d / "link.json", "new", "--save");
  CHECK(fs::is_symlink(d / "link.json"));
  CHECK(slurp(d / "real/file.json") == "new");
  CHECK(d.listing() == "link.json real");
}

TEST_CASE("safe_write: a replaced file keeps its permission bits") {
  TempDir d;
  spit(d / "f", "old");
  fs::permissions(d / "f", fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  safe_write_file(d / "f", "new", "--out");
  CHECK(fs::status(d / "f").permissions() == (fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read));
}

TEST_CASE("safe_write: two writers of one path have their own temporaries; each commit is whole") {
  TempDir d;
  const std::string target = d / "same";
  SafeWriter a(target, "--out"), b(target, "--out");
  a.write("AAA");
  b.write("BBBBBB");
  a.write("A");
  a.commit();
  CHECK(slurp(target) == "AAAA");
  b.commit();
  CHECK(slurp(target) == "BBBBBB");
  CHECK(d.listing() == "same");
}

TEST_CASE("safe_write: two outputs of one command may not name one file") {
  TempDir d;
  spit(d / "x", "");
  fs::create_symlink(d / "x", d / "link");
  fs::create_hard_link(d / "x", d / "hard");
  auto clash = [&](const std::string& a, const std::string& b) {
    return test::input_error([&] {
      require_distinct_outputs({check_output_target(a, "--loss-log"), check_output_target(b, "--out")});
    });
  };
  CHECK(clash(d / "x", d / "x").find("--loss-log, --out") != std::string::npos);
  CHECK_FALSE(clash(d / "x", d / "link").empty());
  CHECK_FALSE(clash(d / "x", d / "hard").empty());
  CHECK_FALSE(clash(d / "new", d.path + "/./new").empty());  // neither exists yet
  require_distinct_outputs({check_output_target(d / "a", "--loss-log"), check_output_target(d / "b", "--out")});
}

TEST_CASE("safe_write: SIGINT or SIGTERM removes the live temporaries") {
  for (int sig : {SIGINT, SIGTERM}) {
    TempDir d;
    spit(d / "old", "old");
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {  // the child: two writers in flight, then the signal
      std::signal(sig, SIG_DFL);  // not the test framework's crash report: the default, death
      try {
        SafeWriter a(d / "new", "--out"), b(d / "old", "--loss-log");
        a.write("partial"), b.write("partial");
        ::raise(sig);
      } catch (...) {
      }
      ::_exit(7);  // not reached when the signal kills it as it should
    }
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    CHECK(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == sig);
    CHECK(d.listing() == "old");
    CHECK(slurp(d / "old") == "old");
  }
}

TEST_CASE("safe_write: shown_path keeps UTF-8 and makes control bytes and invalid bytes '?'") {
  CHECK(shown_path("模型/权重.safetensors") == "模型/权重.safetensors");
  CHECK(shown_path("a\nb\x1b[31mc\x7f") == "a?b?[31mc?");
  CHECK(shown_path("\xff\xfe.svg") == "??.svg");
  CHECK(shown_path("\xc2\x9b" "1m") == "?1m");  // C1 CSI
  CHECK(shown_path("\xed\xa0\x80") == "???");    // a surrogate is not UTF-8
  CHECK(shown_path(std::string(300, 'a'), 10) == "aaaaaaaaaa...");
}

}  // namespace
}  // namespace kvlab::io_safe_write_test

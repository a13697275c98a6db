// The readers against hostile files: nesting that a recursive dump cannot print, headers with tens
// of thousands of tensors, paths that are not regular files, sizes a small file declares beyond the
// work budget, and the corpus fingerprint (FNV-1a). Each case failed (crashed, hung, or passed a
// wrong value) before the rule it tests; docs/reliability.md, "The readers under attack".
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "io/catalogue.hpp"
#include "io/json_read.hpp"
#include "io/safetensors.hpp"
#include "model/weights_budget.hpp"
#include "model/weights_io.hpp"
#include "train/corpus.hpp"
#include "test_util.hpp"

namespace io_readers_test {

namespace {

namespace fs = std::filesystem;
using kvlab::test::input_error;
using Bytes = std::vector<unsigned char>;

/// A fresh folder under the temporary directory, removed with its contents at the end of a test.
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name)
      : path(fs::temp_directory_path() / fmt::format("kvlab_test_readers_{}_{}", name, ::getpid())) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

/// A safetensors file from a header text and `data_bytes` zero bytes of data.
Bytes raw_file(const std::string& header, std::size_t data_bytes) {
  Bytes out;
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<unsigned char>(header.size() >> (8 * i)));
  out.insert(out.end(), header.begin(), header.end());
  out.resize(out.size() + data_bytes, 0);
  return out;
}

std::string as_string(const Bytes& b) { return {b.begin(), b.end()}; }

/// `depth` levels of '[' then as many ']': 16 MB of it is what overflowed the stack.
std::string nested_arrays(std::size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

/// {"a":{"a":...{}...}} with `depth` objects.
std::string nested_objects(std::size_t depth) {
  std::string s;
  s.reserve(depth * 6 + 2);
  for (std::size_t i = 0; i < depth; ++i) s += "{\"a\":";
  s += "{}";
  for (std::size_t i = 0; i < depth; ++i) s += '}';
  return s;
}

constexpr std::size_t kDeep = std::size_t{16} << 20;  // 16 M levels of '[' (16 MB)

/// A small valid model's tensors (F16 zeros) with `config_json` as its kvlab.config.
Bytes model_file_with_config(const kvlab::ModelConfig& shape, const std::string& config_json) {
  auto tensors = kvlab::gpt_tensor_layout(shape);
  for (auto& t : tensors) {
    t.dtype = "F16";
    t.values.assign(static_cast<std::size_t>(t.numel()), 0.0);
  }
  return kvlab::encode_safetensors(tensors, {{kvlab::kConfigMetadataKey, config_json}});
}

}  // namespace

TEST_CASE("readers: JSON nested 16 M levels deep is refused in one line, never dumped") {
  SUBCASE("the bounded parser") {
    const auto deep = [](const std::string& text) {
      try {
        (void)kvlab::parse_json_bounded(text);
      } catch (const kvlab::JsonReadError& e) {
        CHECK(e.kind() == kvlab::JsonReadError::Kind::too_deep);
        return std::string(e.what());
      }
      FAIL("no JsonReadError");
      return std::string();
    };
    CHECK(deep(nested_arrays(kDeep)) == "nesting deeper than 64 levels");
    CHECK(deep(nested_objects(kDeep / 6)) == "nesting deeper than 64 levels");
    CHECK_NOTHROW((void)kvlab::parse_json_bounded(nested_arrays(kvlab::kMaxJsonDepth)));
    CHECK(deep(nested_arrays(kvlab::kMaxJsonDepth + 1)) == "nesting deeper than 64 levels");
  }
  SUBCASE("config.json (the catalogue reader)") {
    const std::string msg = input_error([] {
      kvlab::parse_model_config("{\"num_hidden_layers\": " + nested_arrays(kDeep) + "}", "cfg.json", "x");
    });
    CHECK(msg == "cfg.json: unreadable JSON: nesting deeper than 64 levels");
    CHECK(input_error([] { kvlab::parse_model_config(nested_objects(kDeep / 6), "cfg.json", "x"); })
              .find("nesting deeper than 64 levels") != std::string::npos);
  }
  SUBCASE("kvlab.config in a weights file's metadata, and config.json beside it") {
    // Before: the error path printed the value with json::dump(), one stack frame per level.
    CHECK(input_error([] { kvlab::model_config_from_json("{\"n_layer\": " + nested_arrays(kDeep) + "}", "m"); })
              .find("nesting deeper than 64 levels") != std::string::npos);
    const TempDir dir("nested");
    kvlab::ModelConfig small;
    small.n_layer = 1;
    small.d_model = 8;
    small.n_head = 2;
    small.n_kv_head = 2;
    small.head_dim = 4;
    small.vocab_size = 8;
    small.block_size = 4;
    write_bytes(dir / "m.safetensors",
                as_string(model_file_with_config(small, "{\"n_layer\": " + nested_arrays(kDeep) + "}")));
    CHECK(input_error([&] { kvlab::read_weights_config(dir / "m.safetensors"); })
              .find("nesting deeper than 64 levels") != std::string::npos);
    // A shallow non-integer is named without its nesting: one line either way.
    CHECK(input_error([] { kvlab::model_config_from_json(R"({"n_layer": [[1]]})", "m"); })
              .find("n_layer: must be an integer (got an array)") != std::string::npos);
  }
  SUBCASE("safetensors header and metadata") {
    const std::string header = "{\"__metadata__\":{\"a\":" + nested_arrays(kDeep) + "}}";
    CHECK(input_error([&] { kvlab::parse_safetensors(raw_file(header, 0), "m.safetensors"); }) ==
          "m.safetensors: header: nesting deeper than 64 levels");
  }
}

TEST_CASE("readers: a header of 40000 tensors parses (in linear time)") {
  // Before: nlohmann's parser callback (the duplicate-key check) scanned the whole object at every
  // closing brace, quadratic in the tensor count: minutes for this 2 MB header. The test asserts
  // only that it completes; the harness's timeout catches a hang.
  constexpr int kTensors = 40000;
  std::string header = "{";
  for (int i = 0; i < kTensors; ++i)
    header += fmt::format("{}\"t{}\":{{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[{},{}]}}", i ? "," : "", i,
                          4 * i, 4 * i + 4);
  header += "}";
  const auto f = kvlab::parse_safetensors(raw_file(header, 4 * kTensors), "m.safetensors");
  CHECK(f.tensors.size() == kTensors);
  CHECK(f.tensors.back().name == fmt::format("t{}", kTensors - 1));
  // A duplicate among them is still found (now with a hash set per object).
  const std::string dup = header.substr(0, header.size() - 1) +
                          fmt::format(",\"t7\":{{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[{},{}]}}}}",
                                      4 * kTensors, 4 * kTensors + 4);
  CHECK(input_error([&] { kvlab::parse_safetensors(raw_file(dup, 4 * kTensors + 4), "m.safetensors"); })
            .find("key 't7' appears twice") != std::string::npos);
}

TEST_CASE("readers: --weights on a FIFO, a device or a directory is refused without reading it") {
  const TempDir dir("types");
  // Before: open() on a FIFO waited for a writer forever; /dev/zero was read until memory ran out.
  REQUIRE(::mkfifo((dir / "fifo").c_str(), 0600) == 0);
  CHECK(input_error([&] { kvlab::read_safetensors(dir / "fifo"); })
            .find("is a FIFO (named pipe), not a safetensors file") != std::string::npos);
  CHECK(input_error([] { kvlab::read_safetensors("/dev/zero"); }).find("/dev/zero: is a character device") == 0);
  CHECK(input_error([&] { kvlab::read_safetensors(dir.path.string()); }).find("is a directory") != std::string::npos);
  CHECK(input_error([] { kvlab::read_safetensors(""); }).find("empty path") != std::string::npos);
  // A FIFO named config.json is not read either.
  REQUIRE(::mkfifo((dir / "config.json").c_str(), 0600) == 0);
  CHECK(input_error([&] { kvlab::read_model_config(dir / "config.json"); }).find("not a regular file") !=
        std::string::npos);
}

TEST_CASE("readers: the header length is bounded before anything else is read") {
  const TempDir dir("length");
  // 8 bytes declaring a 2^62-byte header, then a little data: refused by the length alone.
  std::string bytes(8, '\0');
  bytes[7] = 0x40;
  bytes += "{}";
  write_bytes(dir / "m.safetensors", bytes);
  CHECK(input_error([&] { kvlab::read_safetensors(dir / "m.safetensors"); }).find("exceeds the limit") !=
        std::string::npos);
  // A sparse file far larger than any within the budgets is refused by its size, unread.
  {
    std::ofstream(dir / "big.safetensors", std::ios::binary).put('\0');
  }
  fs::resize_file(dir / "big.safetensors", std::uintmax_t{1} << 40);
  CHECK(input_error([&] { kvlab::read_safetensors(dir / "big.safetensors"); }).find("more than a safetensors file") !=
        std::string::npos);
}

TEST_CASE("readers: sizes a file declares are held to the work budget, named in the error") {
  SUBCASE("elements: the header's shapes, before any data is read") {
    const std::string header = R"({"t":{"dtype":"F16","shape":[134217728],"data_offsets":[0,268435456]}})";
    const std::string msg = input_error([&] { kvlab::parse_safetensors(raw_file(header, 8), "m.safetensors"); });
    CHECK(msg.find("m.safetensors: the tensors hold more than 67108864 elements, the budget") == 0);
  }
  kvlab::ModelConfig c;
  c.n_layer = 1;
  c.d_model = 4;
  c.n_head = 1;
  c.n_kv_head = 1;
  c.head_dim = 4;
  c.vocab_size = 8;
  c.block_size = 8;
  SUBCASE("block_size 2^20 under RoPE: a small file, no position table") {
    // Before: accepted; perplexity on it ran for hours, a check took gigabytes.
    kvlab::ModelConfig big = c;
    big.positional = kvlab::Positional::rope;
    big.block_size = 1 << 20;
    const TempDir dir("block");
    const Bytes file = model_file_with_config(big, kvlab::model_config_to_json(big));
    CHECK(file.size() < 4096);
    write_bytes(dir / "m.safetensors", as_string(file));
    CHECK(input_error([&] { kvlab::load_gpt<double>(dir / "m.safetensors"); })
              .find("m.safetensors: block_size 1048576 exceeds the budget of 65536 for the CPU checks") !=
          std::string::npos);
  }
  SUBCASE("vocab_size 2^20") {
    kvlab::ModelConfig big = c;
    big.d_model = 1;
    big.head_dim = 1;
    big.vocab_size = 1 << 20;
    CHECK(input_error([&] { kvlab::require_weights_budget(big, "m.safetensors"); }) ==
          "m.safetensors: vocab_size 1048576 exceeds the budget of 65536 for the CPU checks");
  }
  SUBCASE("a K/V cache of more than 1 GiB at block_size") {
    kvlab::ModelConfig big = c;
    big.positional = kvlab::Positional::rope;
    big.block_size = 65536;
    big.n_layer = 64;
    big.head_dim = 64;
    CHECK(input_error([&] { kvlab::require_weights_budget(big, "m.safetensors"); })
              .find("more than the budget of 1073741824 bytes (1 GiB)") != std::string::npos);
    big.n_layer = 1;
    CHECK_NOTHROW(kvlab::require_weights_budget(big, "m.safetensors"));
  }
  SUBCASE("2^64 - 1 is printed as written, not as -1") {
    CHECK(input_error([] { kvlab::model_config_from_json(R"({"n_layer": 18446744073709551615})", "m"); })
              .find("n_layer: 18446744073709551615 is out of range") != std::string::npos);
  }
}

TEST_CASE("readers: KVLAB_DATA without a catalogue is one line naming it") {
  const TempDir dir("data");
  const char* old = std::getenv("KVLAB_DATA");
  const std::string saved = old ? old : "";
  ::setenv("KVLAB_DATA", dir.path.c_str(), 1);
  const std::string missing = input_error([] { kvlab::gpu_names(); });
  fs::create_directories(dir.path / "models");
  const std::string empty = input_error([] { kvlab::load_model("llama-2-7b"); });
  if (old) ::setenv("KVLAB_DATA", saved.c_str(), 1);
  else ::unsetenv("KVLAB_DATA");
  CHECK(missing.find("KVLAB_DATA=" + dir.path.string() + " holds no catalogue") == 0);
  CHECK(empty.find("holds no NAME.json entry") != std::string::npos);
}

TEST_CASE("readers: the fortunes folder: oversized or unreadable files are input errors") {
  const TempDir dir("fortunes");
  write_bytes(dir / "a", "one\n%\ntwo\n%\n");
  CHECK(kvlab::train::load_fortunes(dir.path.string()).has_value());
  REQUIRE(::mkfifo((dir / "pipe").c_str(), 0600) == 0);  // not a regular file: skipped, not opened
  CHECK(kvlab::train::load_fortunes(dir.path.string())->files == std::vector<std::string>{"a"});
  // Before: a file load_fortunes could not read was std::runtime_error, the CLI's exit 3.
  {
    std::ofstream(dir / "b", std::ios::binary).put('x');
  }
  fs::resize_file(dir / "b", kvlab::train::kMaxFortunesBytes + 1);  // sparse
  CHECK(input_error([&] { kvlab::train::load_fortunes(dir.path.string()); }).find("budget of the training text") !=
        std::string::npos);
  fs::remove(dir / "b");
  if (::geteuid() != 0) {  // root reads a file whatever its mode
    write_bytes(dir / "c", "three\n");
    fs::permissions(dir / "c", fs::perms::none);
    CHECK(input_error([&] { kvlab::train::load_fortunes(dir.path.string()); }).find("c: cannot read") !=
          std::string::npos);
  }
}

TEST_CASE("readers: the corpus fingerprint is FNV-1a 64 (offset basis 14695981039346656037)") {
  using kvlab::train::corpus_hash;
  CHECK(kvlab::train::kFnv1aOffsetBasis == 14695981039346656037ull);
  // The reference test vectors (Fowler/Noll/Vo): "" -> the offset basis, "a", "foobar".
  CHECK(corpus_hash({}) == 0xcbf29ce484222325ull);
  CHECK(corpus_hash({'a'}) == 0xaf63dc4c8601ec8cull);
  CHECK(corpus_hash({'f', 'o', 'o', 'b', 'a', 'r'}) == 0x85944171f73967e8ull);
}

}  // namespace io_readers_test

// kv-size (checks/kv_size.cpp): the course table passes with exactly its errata, and fails with a
// formula without the factor 2, a loader that misreads the K/V heads or a wrong cheatsheet cell; the
// calculator's figures and refusals; its judge on hand-made measurements.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <string>

#include <fmt/format.h>

#include "checks/kv_size.hpp"
#include "core/error.hpp"
#include "../test_util.hpp"

namespace check_kv_size_test {

using kvlab::test::input_error;

namespace {

using namespace kvlab;
using namespace kvlab::checks;

const std::string kFixtures =
    (std::filesystem::path(__FILE__).parent_path().parent_path() / "data" / "configs").string();

double metric(const Result& r, const std::string& key) {
  for (const auto& [k, v] : r.metrics)
    if (k == key) return r.metric_value(key);
  FAIL("no metric " << key);
  return 0;
}

bool any_note_has(const Result& r, const std::string& text) {
  return std::any_of(r.notes.begin(), r.notes.end(),
                     [&](const std::string& n) { return n.find(text) != std::string::npos; });
}

/// The expectation whose quantity starts with `prefix`; fails the test when there is none.
const Expectation* row_starting(const std::vector<Expectation>& rows, const std::string& prefix) {
  for (const auto& e : rows)
    if (e.quantity.rfind(prefix, 0) == 0) return &e;
  FAIL("no expectation starts with: " << prefix);
  return nullptr;
}

const Expectation* row_starting(const Result& r, const std::string& prefix) {
  return row_starting(r.expectations, prefix);
}

/// The library's cache size, but "forgetting the factor 2" of K and V (every count halved).
KvSizeParts forgot_factor_two() {
  KvSizeParts p;
  p.cache_size = [](const ModelSpec& m, const KvQuery& q) {
    KvCacheSize s = kv_cache_size(m, q);
    s.elements_per_token /= 2;
    s.bits_per_token /= 2;
    s.bytes_per_token /= 2;
    s.total_bits /= 2;
    s.total_bytes /= 2;
    return s;
  };
  return p;
}

}  // namespace

TEST_CASE("kv-size: the course table passes, with exactly the five errata") {
  const Result r = run_kv_size({}, RunContext{});
  CHECK(r.passed());
  const auto errata = r.errata();
  CHECK(errata.size() == 5);  // E1–E4, and E11 (EAGLE's ~200 MB) from the cheatsheet's 000 §9.3
  const auto has = [&](const std::string& s) {
    return std::any_of(errata.begin(), errata.end(), [&](const std::string& e) { return e.find(s) != std::string::npos; });
  };
  CHECK(has("≈ 1.25 GB"));
  CHECK(has("≈ 0.27 GB"));
  CHECK(has("320"));
  CHECK(has("003 Q5"));
  CHECK(has("~200 MB"));
  CHECK(metric(r, "bytes") == 85899345920.0);  // 80 GiB
  CHECK(metric(r, "bytes_per_token") == 327680.0);
  CHECK(metric(r, "max_batch_8xa100_80gb") == 298.0);
}

TEST_CASE("kv-size: the max-batch erratum is the 1.25 GB slip again; the premises are stated") {
  const Result r = run_kv_size({}, RunContext{});
  const auto errata = r.errata();
  const auto batch = std::find_if(errata.begin(), errata.end(),
                                  [](const std::string& e) { return e.find("320") != std::string::npos; });
  REQUIRE(batch != errata.end());
  CHECK(batch->find("the same GB/GiB slip as the 1.25 GB row, one slip with two consequences") != std::string::npos);
  CHECK(batch->find("floor(298.02) = 298") != std::string::npos);
  CHECK(batch->find("400 / 1.25 = 320") != std::string::npos);
  CHECK(any_note_has(r, "'约 400 GB', is the document's own rough premise"));
  CHECK(any_note_has(r, "memory_bytes = 80,000,000,000 B; the card itself reports 81,920 MiB"));
  CHECK(any_note_has(r, "85,899,345,920 B"));
}

TEST_CASE("kv-size: overflows name --batch × --ctx; a wider dtype that overflows is a table cell") {
  KvSizeOptions o;
  o.model = "llama-3.1-405b";
  o.batch = 4'000'000'000;
  o.ctx = 4'000'000'000;
  CHECK(input_error([&] { run_kv_size(o, RunContext{}); }).find("--batch × --ctx × KV bits per token") == 0);
  o.batch = 10'000'000;  // 1e13 tokens: fits at int4 (4 bits), not at 8 bits or more
  o.ctx = 1'000'000;
  o.kv_dtype = "int4";
  const Result r = run_kv_size(o, RunContext{});
  CHECK(r.passed());
  const Table* dtypes = nullptr;
  for (const auto& t : r.tables)
    if (t.title == "the same cache in each dtype") dtypes = &t;
  REQUIRE(dtypes != nullptr);
  int over = 0;
  for (const auto& row : dtypes->rows)
    if (std::holds_alternative<std::string>(row[3]) && std::get<std::string>(row[3]) == "over 2^64 bits") ++over;
  CHECK(over == 5);
}

TEST_CASE("kv-size can fail: a formula without the factor 2") {
  CHECK_FALSE(run_kv_size({}, RunContext{}, forgot_factor_two()).passed());
  KvSizeOptions o;
  o.model = "llama-2-70b";
  CHECK(run_kv_size(o, RunContext{}).passed());
  CHECK_FALSE(run_kv_size(o, RunContext{}, forgot_factor_two()).passed());
}

TEST_CASE("kv-size can fail: a loader that misreads the K/V heads") {
  KvSizeParts p;
  p.load_model = [](const std::string& n) {
    ModelSpec m = load_model(n);
    m.n_kv_head = m.n_head;  // ignores GQA: every model read as MHA
    return m;
  };
  CHECK_FALSE(run_kv_size({}, RunContext{}, p).passed());
}

TEST_CASE("kv-size on a config with no reference: the tensor count still catches a wrong total") {
  KvSizeOptions o;
  o.config = kFixtures + "/hf_llama_2_7b.json";
  o.kv_dtype = "int4";
  const Result ok = run_kv_size(o, RunContext{});
  CHECK(ok.passed());
  CHECK(any_note_has(ok, "no independent reference"));
  CHECK(metric(ok, "bytes") == 4096.0 * 524288 / 4);
  KvSizeParts p;
  p.cache_size = [](const ModelSpec& m, const KvQuery& q) {
    KvCacheSize s = kv_cache_size(m, q);
    s.total_bits = s.tokens * s.elements_per_token * 8;  // int4 costed as a byte per element
    return s;
  };
  CHECK_FALSE(run_kv_size(o, RunContext{}, p).passed());
}

TEST_CASE("kv-size: the course's headline figures") {
  KvSizeOptions o;
  o.model = "llama-3-70b";
  o.ctx = 4096;
  o.kv_dtype = "fp16";
  CHECK(metric(run_kv_size(o, RunContext{}), "bytes") == 1342177280.0);
  KvSizeOptions l;
  l.model = "llama-2-70b";
  l.batch = 32;
  l.ctx = 8192;
  l.kv_dtype = "bf16";
  CHECK(metric(run_kv_size(l, RunContext{}), "bytes") == 80.0 * (1ull << 30));
  l.kv_heads = 64;
  CHECK(metric(run_kv_size(l, RunContext{}), "bytes") == 640.0 * (1ull << 30));
  l.kv_heads = 1;
  CHECK(metric(run_kv_size(l, RunContext{}), "bytes") == 10.0 * (1ull << 30));
}

TEST_CASE("kv-size: option errors name the option") {
  KvSizeOptions o;
  o.batch = 4;
  CHECK(input_error([&] { run_kv_size(o, RunContext{}); }).find("--batch: needs --model") != std::string::npos);
  o.model = "nosuch";
  CHECK(input_error([&] { run_kv_size(o, RunContext{}); }).find("--model: unknown model") != std::string::npos);
  o.model = "llama-2-70b";
  o.batch = 0;
  CHECK(input_error([&] { run_kv_size(o, RunContext{}); }).find("--batch") != std::string::npos);
  o.batch = 1;
  o.kv_heads = 5;
  CHECK(input_error([&] { run_kv_size(o, RunContext{}); }).find("kv-heads") != std::string::npos);
  KvSizeOptions both;
  both.model = "gpt2";
  both.config = kFixtures + "/hf_gpt2.json";
  CHECK(input_error([&] { run_kv_size(both, RunContext{}); }).find("--model, --config") != std::string::npos);
  KvSizeOptions dir;
  dir.config = kFixtures;
  CHECK(input_error([&] { run_kv_size(dir, RunContext{}); }).find("--config: ") == 0);
}



TEST_CASE("kv-size judges every cell of the cheatsheet's missing tables, and fails on one wrong cell") {
  const Result ok = run_kv_size({}, RunContext{});
  CHECK(ok.passed());
  CHECK(row_starting(ok, "an EAGLE draft head for a 70B target")->is_erratum());  // E11
  CHECK_FALSE(row_starting(ok, "memory a vanilla SD draft adds")->is_erratum());   // +14 GB ✓
  for (const char* name : {"000-2.2", "000-4.1", "000-9.1", "000-9.3", "003-Q7", "004-2.5"}) {
    KvSizeParts parts;
    parts.cheat_table = [name](const std::string& n) {
      CheatTable t = cheatsheet_entry(n).build({});
      if (n == name) {  // the last numeric cell of the first row, off by one part in a million
        auto& row = t.table.rows.at(0);
        for (auto it = row.rbegin(); it != row.rend(); ++it) {
          if (auto* d = std::get_if<double>(&*it)) { *d *= 1 + 1e-6; break; }
          if (auto* i = std::get_if<std::int64_t>(&*it)) { *i += 1; break; }
        }
      }
      return t;
    };
    const Result bad = run_kv_size({}, RunContext{}, parts);
    CHECK_MESSAGE(!bad.passed(), name);
    CHECK(row_starting(bad, fmt::format("cheatsheet {}:", name))->measured == 1);
  }
  // 000 §9.3's two figures: a 7B draft counted at 1 GB more, an EAGLE head at one layer less.
  KvSizeParts heavier;
  heavier.cheat_table = [](const std::string& n) {
    CheatTable t = cheatsheet_entry(n).build({});
    if (n == "000-9.3") {
      std::get<double>(t.table.rows.at(1).at(1)) += 1.0;
      std::get<double>(t.table.rows.at(2).at(1)) -= 0.8;
    }
    return t;
  };
  const Result heavy = run_kv_size({}, RunContext{}, heavier);
  CHECK_FALSE(row_starting(heavy, "memory a vanilla SD draft adds")->holds());
  CHECK_FALSE(row_starting(heavy, "an EAGLE draft head for a 70B target")->holds());
}

TEST_CASE("kv-size: judge fails a byte count one off, a NaN, a wrong max batch and a miscounted tensor") {
  const KvSizeMeasured good = measure_kv_size({});
  for (const Expectation& e : judge_kv_size(good)) CHECK_MESSAGE(e.holds(), e.quantity);
  KvSizeMeasured off = good;
  off.course->per_token[1].bytes_per_token += 1;  // llama-2-13b one byte per token off
  CHECK_FALSE(row_starting(judge_kv_size(off), "K+V bytes per token, llama-2-13b")->holds());
  off = good;
  off.course->variants[1].total_bytes += 2;  // the MHA variant
  CHECK_FALSE(row_starting(judge_kv_size(off), "KV cache, 70B MHA")->holds());
  off = good;
  off.course->mha_70.bytes_per_token = std::numeric_limits<double>::quiet_NaN();
  CHECK_FALSE(row_starting(judge_kv_size(off), "KV cache of MHA ÷ GQA")->holds());
  off = good;
  off.course->l3_70_4k.total_bytes = 1'250'000'000;  // 1.25 GB read as the cache: 320 sequences
  CHECK_FALSE(row_starting(judge_kv_size(off), "max batch, llama-3-70b")->holds());

  KvSizeOptions o;
  o.model = "llama-2-70b";
  const KvSizeMeasured calc = measure_kv_size(o);
  for (const Expectation& e : judge_kv_size(calc)) CHECK_MESSAGE(e.holds(), e.quantity);
  off = calc;
  off.calc->counted_bits += 8;  // one byte more in the tensors than the closed form says
  CHECK_FALSE(row_starting(judge_kv_size(off), "KV-cache bytes, llama-2-70b")->holds());
  off = calc;
  off.calc->own16.bytes_per_token = std::numeric_limits<double>::quiet_NaN();
  CHECK_FALSE(row_starting(judge_kv_size(off), "K+V bytes per token, llama-2-70b")->holds());
}

}  // namespace check_kv_size_test

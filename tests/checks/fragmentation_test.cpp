// fragmentation (checks/fragmentation.cpp): the check passing, failing with an allocator that
// loses blocks or a fit count that forgets to round up to whole blocks, refusing bad options,
// and its judge on measurements made by hand.
#include <doctest/doctest.h>

#include "../test_util.hpp"

#include <memory>
#include <string>
#include <vector>

#include "checks/fragmentation.hpp"
#include "core/error.hpp"
#include "serve/kv_memory.hpp"

namespace check_fragmentation_test {

using namespace kvlab;
using namespace kvlab::serve;
using kvlab::test::input_error;


namespace {

// An allocator that loses a block on every release: it keeps the block but reports it as neither
// held nor free.
class LeakyMemory final : public KvMemory {
 public:
  explicit LeakyMemory(std::unique_ptr<KvMemory> inner) : inner_(std::move(inner)) {}
  bool reserve(std::uint64_t id, std::uint64_t len, std::uint64_t f) override { return inner_->reserve(id, len, f); }
  void release(std::uint64_t id) override {
    const bool had = inner_->held_slots(id) > 0;
    inner_->release(id);
    if (had && inner_->reserve(kStolen + lost_, 1, 1)) ++lost_, lost_slots_ += inner_->held_slots(kStolen + lost_ - 1);
  }
  std::uint64_t held_slots() const override { return inner_->held_slots() - lost_slots_; }
  std::uint64_t held_slots(std::uint64_t id) const override { return inner_->held_slots(id); }
  std::uint64_t free_slots() const override { return inner_->free_slots(); }
  std::uint64_t largest_free_run() const override { return inner_->largest_free_run(); }
  std::uint64_t capacity_slots() const override { return inner_->capacity_slots(); }

 private:
  static constexpr std::uint64_t kStolen = 1u << 30;
  std::unique_ptr<KvMemory> inner_;
  std::uint64_t lost_ = 0, lost_slots_ = 0;
};

}  // namespace

TEST_CASE("fragmentation: passes, and fails with an allocator that loses blocks or a wrong fit count") {
  using namespace kvlab::checks;
  const RunContext ctx;
  FragmentationOptions o;
  const Result ok = run_fragmentation(o, ctx);
  CHECK(ok.passed());
  CHECK(ok.metric_value("paged_waste_max_slots") <= 15);
  CHECK(ok.metric_value("utilization_paged") > ok.metric_value("utilization_max_length"));
  CHECK_FALSE(ok.errata().empty());  // the course's ~70% (E13)

  FragmentationParts leaky;
  leaky.make_memory = [](KvAllocator k, std::uint64_t c, std::uint64_t l, std::uint64_t b) -> std::unique_ptr<KvMemory> {
    auto inner = make_kv_memory(k, c, l, b);
    if (k != KvAllocator::paged) return inner;
    return std::make_unique<LeakyMemory>(std::move(inner));
  };
  const Result leaked = run_fragmentation(o, ctx, leaky);
  CHECK_FALSE(leaked.passed());
  CHECK(kvlab::test::row_fails(leaked, "pool conservation"));

  FragmentationParts no_round_up;  // paged counted without rounding up to whole blocks
  no_round_up.requests_that_fit = [](KvAllocator k, const std::vector<std::uint64_t>& lens, std::uint64_t c,
                                     std::uint64_t l, std::uint64_t b) {
    return requests_that_fit(k == KvAllocator::paged ? KvAllocator::exact : k, lens, c, l, b);
  };
  o.block = 256;  // where rounding to blocks matters
  CHECK(run_fragmentation(o, ctx).passed());
  const Result unrounded = run_fragmentation(o, ctx, no_round_up);
  CHECK_FALSE(unrounded.passed());
  CHECK(kvlab::test::row_fails(unrounded, "largest batch at final length in 32768 slots, paged"));

  o = FragmentationOptions{};
  o.kv_tokens = 100;
  CHECK(input_error([&] { run_fragmentation(o, ctx); }).find("--kv-tokens") != std::string::npos);
  o = FragmentationOptions{};
  o.block = 1000;  // over the 512 cap

  CHECK(input_error([&] { run_fragmentation(o, ctx); }).find("--block") != std::string::npos);
  o = FragmentationOptions{};
  o.block = 512;  // one 2048-token request needs 2048 slots in blocks of 512: fine at 2048
  o.kv_tokens = 2048;
  CHECK(run_fragmentation(o, ctx).passed());
  o = FragmentationOptions{};
  o.model = "nosuch";
  CHECK(input_error([&] { run_fragmentation(o, ctx); }).find("--model") != std::string::npos);
}

TEST_CASE("fragmentation: judge fails a leaked slot, a sequence wasting a whole block, and a batch one short") {
  using namespace kvlab::checks;
  FragmentationOptions o;
  o.requests = 40;
  const FragmentationMeasured good = measure_fragmentation(o, RunContext{});
  const auto rows = judge_fragmentation(good);
  REQUIRE(rows.size() == 13);
  for (const Expectation& e : rows) CHECK(e.holds());
  FragmentationMeasured off = good;
  off.runs[1].conservation = 1;  // the exact allocator's pool not whole at the end
  CHECK_FALSE(judge_fragmentation(off)[1].holds());
  off = good;
  off.runs[2].waste_max = 16;  // a whole empty block of 16 behind one sequence
  CHECK_FALSE(judge_fragmentation(off)[2].holds());
  off = good;
  off.runs[0].sum.utilization *= 1 + 1e-9;  // max-length utilization off the rule's by 1e-9 relative
  CHECK_FALSE(judge_fragmentation(off)[4].holds());
  off = good;
  off.fit_library[2] -= 1;  // paging fits one request fewer than the prefix sums say
  CHECK_FALSE(judge_fragmentation(off)[11].holds());
}

TEST_CASE("fragmentation: a positive rate below 1e-9 (1/rate overflows near 1e-320) is refused, naming --rate") {
  checks::FragmentationOptions o;
  o.rate = 1e-320;
  CHECK_THROWS_WITH_AS(checks::run_fragmentation(o, {}), doctest::Contains("--rate"), InputError);
  o.rate = 5e-10;
  CHECK_THROWS_WITH_AS(checks::run_fragmentation(o, {}), doctest::Contains("--rate"), InputError);
}

}  // namespace check_fragmentation_test

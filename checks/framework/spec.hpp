// A check declared once: CheckSpec (who it is), an option table (what it takes), and three small
// functions (what it does).
//
//   measure(options, context) -> Measured     numbers only: what the library computed or counted
//   judge(const Measured&)    -> expectations  the verdict rows: expected ± tolerance (why), measured
//   present(const Measured&, Result&)          tables, notes, metrics and plots for the reader
//
// The table drives everything that used to be written by hand in several places: the CLI11
// binding (defaults shown by CLI11, not typed into the help), validation (one function for the
// command line and for unit tests: validate_options), `kvlab list --options`, and the ctest and
// bench lists (`kvlab list --format json`). The framework fills Result's check, source, claim and
// claim_zh.
//
// Unit tests call measure with faulty parts and judge on hand-made Measured values; the test of
// every check at its defaults (tests/checks/framework_test.cpp) refuses an expectation that could
// not fail (Expectation::attainable).
//
// Example (checks/causal_mask.cpp):
//   const CheckDef<CausalMaskOptions, CausalMaskMeasured>& causal_mask_check();   // the definition
//   KVLAB_REGISTER_SPEC(causal_mask_check);                                       // in the .cpp
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "report/result.hpp"
#include "framework/check.hpp"
#include "framework/options.hpp"

namespace kvlab::checks {

/// What a check accepts beyond its own options, and what kind of command it is. Every flag is
/// off by default; the front end adds and refuses the common options from these.
struct CheckTraits {
  bool dtype = false;          ///< --dtype changes what it computes (model checks)
  bool weights = false;        ///< builds a MiniGPT: accepts --weights FILE.safetensors
  bool draft_weights = false;  ///< builds a target and a draft: --weights with --draft-weights
  std::string_view weights_refusal; ///< non-empty: --weights is accepted and refused with this reason
  std::string_view dtype_refusal;   ///< non-empty: --dtype is refused with this reason, which --help shows
  bool cuda = false;           ///< has a CUDA path (--device cuda)
  bool plot = false;           ///< its Result carries plots: --plot FILE.svg|term
  bool bench = false;          ///< a benchmark: only `kvlab all --bench` runs it
};

/// The identity of a check: everything `list`, `--help`, `explain` and the reports say about it.
/// Its texts are string literals (views of static storage): a spec is data written once.
struct CheckSpec {
  std::string_view name;         ///< the subcommand, e.g. "causal-mask"
  int order = 0;            ///< position in document order (`list`, `all`); unique
  std::string_view source;       ///< document sections, e.g. "004 §3.3; 000 §6.3"
  std::string_view summary;      ///< one line for `kvlab list`
  std::string_view claim_zh;     ///< the claim in Chinese (`--lang zh`), one line, in the course's terms
  std::string_view description;  ///< the --help footer: what it shows and how to read the output
  std::string_view derivation;   ///< `kvlab explain NAME`: the argument or arithmetic, ending with its source
  std::string_view claim;        ///< Result::claim when the claim does not depend on the options
  CheckTraits traits;
};

/// The values an option may take. Integers and reals are closed ranges; a real must be finite; a
/// path is any text but the empty one (framework/path_option.hpp).
struct Allowed {
  enum class Kind { any, integers, reals, tokens, one_of, path };
  Kind kind = Kind::any;
  double lo = 0, hi = 0;             ///< integers, reals: [lo, hi]; tokens: [1, hi]
  std::vector<std::string> members;  ///< one_of

  static Allowed any_value() { return {}; }
  static Allowed integers(std::int64_t lo, std::int64_t hi) {
    return {Kind::integers, static_cast<double>(lo), static_cast<double>(hi), {}};
  }
  static Allowed reals(double lo, double hi) { return {Kind::reals, lo, hi, {}}; }
  /// A token count: digits or 4k / 128k / 1M (io/units.hpp), in [1, hi].
  static Allowed tokens(std::int64_t hi) { return {Kind::tokens, 1, static_cast<double>(hi), {}}; }
  static Allowed one_of(std::vector<std::string> members) { return {Kind::one_of, 0, 0, std::move(members)}; }
  /// A file or folder to read: the command line refuses an empty one (PathGiven). In a
  /// std::string field, empty means not given; in an optional<string> field, given empty is refused.
  static Allowed path() { return {Kind::path, 0, 0, {}}; }
};

/// A pointer to the Options field an option fills. An optional<T> field is empty unless given.
template <class O>
using Field = std::variant<int O::*, std::int64_t O::*, std::uint64_t O::*, double O::*, bool O::*,
                           std::string O::*, std::optional<int> O::*, std::optional<std::int64_t> O::*,
                           std::optional<double> O::*, std::optional<std::string> O::*,
                           std::vector<int> O::*, std::vector<std::int64_t> O::*, std::vector<double> O::*>;

/// One row of a check's option table.
template <class O>
struct OptionRow {
  std::string_view flag;  ///< "--keys"; "--target,--weights" gives an alias (messages name the first)
  Field<O> field;     ///< &Options::keys
  Allowed allowed;    ///< the values it takes; the same rule on the command line and in validate_options
  std::string_view help;  ///< what it is (the default and the range are added by the framework)
  std::string_view type_name;  ///< the --help placeholder when CLI11's (INT, FLOAT, TEXT) says too little
  std::string_view excludes;   ///< another row's flag this one may not be given with (CLI11's excludes)
};

/// Throws InputError naming `flag` and the allowed values unless `v` is allowed.
void require_allowed(const std::string& flag, const Allowed& allowed, double v);
void require_allowed(const std::string& flag, const Allowed& allowed, const std::string& v);

/// Throws InputError for the first option of `options` whose value is not allowed, in the words
/// the command line uses ("--keys: must be an integer in [2, 256] (got 300)"). A unit test that
/// builds Options by hand meets the same rule as a user typing them.
template <class O>
void validate_options(const std::vector<OptionRow<O>>& rows, const O& options) {
  for (const auto& row : rows)
    std::visit(
        [&](auto member) {
          const auto& value = options.*member;
          const std::string flag(row.flag.substr(0, row.flag.find(',')));
          using V = std::decay_t<decltype(value)>;
          if constexpr (std::is_same_v<V, bool>) {
          } else if constexpr (std::is_same_v<V, std::string>) {
            // A path held in a plain string is empty when not given (the command line refuses an
            // empty one: PathGiven); an optional<string> path tells "not given" from "given empty".
            if (row.allowed.kind != Allowed::Kind::path || !value.empty()) require_allowed(flag, row.allowed, value);
          } else if constexpr (std::is_same_v<V, std::optional<std::string>>) {
            if (value) require_allowed(flag, row.allowed, *value);
          } else if constexpr (std::is_arithmetic_v<V>) {
            require_allowed(flag, row.allowed, static_cast<double>(value));
          } else if constexpr (requires { value.has_value(); }) {
            if (value) require_allowed(flag, row.allowed, static_cast<double>(*value));
          } else {
            for (const auto& v : value) require_allowed(flag, row.allowed, static_cast<double>(v));
          }
        },
        row.field);
}

/// The validator the command line applies for `allowed` (IntRange, FiniteRange, TokenCount, IsMember,
/// PathGiven).
std::optional<Validator> validator_for(const Allowed& allowed);

/// Declares `row` on `sub`, bound to `options`' field, with its validator and its default shown.
template <class O>
void bind_row(OptionSet& sub, const OptionRow<O>& row, O& options) {
  std::visit(
      [&](auto member) {
        auto& target = options.*member;
        using V = std::decay_t<decltype(target)>;
        Option* opt = nullptr;
        if constexpr (std::is_same_v<V, bool>)
          opt = sub.add_flag(std::string(row.flag), target, std::string(row.help));
        else
          opt = sub.add_option(std::string(row.flag), target, std::string(row.help));
        if (const auto v = validator_for(row.allowed)) {
          if (row.allowed.kind == Allowed::Kind::tokens)
            opt->transform(*v);
          else
            opt->check(*v);
        }
        if (!row.type_name.empty()) opt->type_name(std::string(row.type_name));
        if constexpr (!std::is_same_v<V, bool>) opt->show_default();
      },
      row.field);
}

/// A check as data: its spec, its option table and its three steps. `constraints` holds the rules
/// that relate options to each other (--queries < --keys); it runs after the table's ranges.
/// `claim`, when set, words the claim from what was measured (it names a size the options chose).
template <class O, class M>
struct CheckDef {
  CheckSpec spec;
  std::vector<OptionRow<O>> options;
  std::function<void(const O&)> constraints;
  std::function<M(const O&, const RunContext&)> measure;
  std::function<std::vector<Expectation>(const M&)> judge;
  std::function<void(const M&, Result&)> present;
  std::function<std::string(const M&)> claim;
  /// With traits.cuda: what the device path would leave out or refuse for these options and
  /// context (Check::cuda_gap); "" or unset when it runs everything the CPU path would.
  std::function<std::string(const O&, const RunContext&)> cuda_gap;
  /// A statistical check's options that set its sample size ("--prompts, --new-tokens"), named
  /// when a run is refused for being too small to fail (require_power).
  std::string_view sample_options;
};

/// Refuses a run too small to judge: InputError, naming `sample_options` and how many times over the
/// widest refused row's ± must shrink (not a sample count: how fast a bound shrinks depends on the check), when a row cannot fail (Expectation::can_fail: its interval takes in every
/// value `attainable` allows, a probability's [0, 1] or tokens per step's [1, K + 1]). Such a run is
/// the user's too-small sample; a row whose measured value is NaN is left to fail. At the defaults
/// the test over every check holds each row to the same rule.
void require_power(const Result& r, std::string_view sample_options);

/// Validates `options`, measures, judges and presents: the Result `kvlab NAME` prints.
/// `measure` replaces def.measure (unit tests pass one built with faulty parts).
template <class O, class M>
Result run_check(const CheckDef<O, M>& def, const O& options, const RunContext& ctx,
                 const std::type_identity_t<std::function<M(const O&, const RunContext&)>>& measure = {}) {
  validate_options(def.options, options);
  if (def.constraints) def.constraints(options);
  const M measured = measure ? measure(options, ctx) : def.measure(options, ctx);
  Result r;
  r.check = def.spec.name;
  r.source = def.spec.source;
  r.claim = def.claim ? def.claim(measured) : std::string(def.spec.claim);
  r.claim_zh = def.spec.claim_zh;
  for (Expectation& e : def.judge(measured)) r.expect(std::move(e));
  require_power(r, def.sample_options);
  if (def.present) def.present(measured, r);
  return r;
}

/// The Check the front end runs, made from a CheckDef: its traits answer the Check queries, its
/// table binds the options.
template <class O, class M>
class SpecCheck final : public Check {
 public:
  explicit SpecCheck(const CheckDef<O, M>& def) : def_(def) {}
  std::string name() const override { return std::string(def_.spec.name); }
  std::string source() const override { return std::string(def_.spec.source); }
  std::string summary() const override { return std::string(def_.spec.summary); }
  std::string claim_zh() const override { return std::string(def_.spec.claim_zh); }
  std::string description() const override {
    return std::string(def_.spec.description.empty() ? def_.spec.summary : def_.spec.description);
  }
  std::string derivation() const override { return std::string(def_.spec.derivation); }
  void bind(OptionSet& sub) override {
    for (const auto& row : def_.options) bind_row(sub, row, options_);
    for (const auto& row : def_.options)
      if (!row.excludes.empty())
        sub.find(std::string(row.flag.substr(0, row.flag.find(','))))->excludes(sub.find(std::string(row.excludes)));
    const std::string dtype_refusal(def_.spec.traits.dtype_refusal);
    if (Option* dtype = dtype_refusal.empty() ? nullptr : sub.find("--dtype"))
      dtype->description("Not taken: " + dtype_refusal)->check(Refused(dtype_refusal));
  }
  bool has_cuda() const override { return def_.spec.traits.cuda; }
  std::string cuda_gap(const RunContext& ctx) const override {
    return def_.cuda_gap ? def_.cuda_gap(options_, ctx) : std::string();
  }
  bool has_plot() const override { return def_.spec.traits.plot; }
  bool is_bench() const override { return def_.spec.traits.bench; }
  bool uses_dtype() const override { return def_.spec.traits.dtype; }
  bool uses_weights() const override { return def_.spec.traits.weights || def_.spec.traits.draft_weights; }
  bool uses_draft_weights() const override { return def_.spec.traits.draft_weights; }
  std::string weights_refusal() const override { return std::string(def_.spec.traits.weights_refusal); }
  Result run(const RunContext& ctx) override { return run_check(def_, options_, ctx); }

 private:
  const CheckDef<O, M>& def_;
  O options_;
};

/// The front end's Check for `def` (which must outlive it).
template <class O, class M>
std::unique_ptr<Check> make_spec_check(const CheckDef<O, M>& def) {
  return std::make_unique<SpecCheck<O, M>>(def);
}

}  // namespace kvlab::checks

/// Registers the check that `definition()` (a function returning a const CheckDef&, whose static
/// outlives every use) declares, at the order its spec gives. Once, at namespace scope, in the
/// check's .cpp file.
#define KVLAB_REGISTER_SPEC(definition)                                                         \
  static const bool KVLAB_CONCAT(kvlab_registered_, __LINE__) = ::kvlab::checks::register_check( \
      definition().spec.order, [] { return ::kvlab::checks::make_spec_check(definition()); })

// Which algorithm runs a collective: the one the cost model predicts fastest among those that can run the shape,
// unless CHORUS_ALGO (or NCCL_ALGO) forces or excludes some, or the tuning file has a measured choice for it.
// Deterministic: every rank of a communicator has the same inputs, so every rank picks the same plan.
#pragma once

#include <vector>

#include "algorithms/cost.hpp"
#include "algorithms/plan.hpp"
#include "core/settings.hpp"
#include "tuner/algo_override.hpp"
#include "tuner/call_selection.hpp"

namespace chorus::tuner {

/// Everything a choice depends on; the same on every rank of a communicator.
struct Selector {
  algo::CostInputs costs;
  std::vector<AlgoRule> rules;
  /// Measured choices for this launch shape (tuning file, CostTable::choices): they take the place of the model's
  /// choice where they match and their algorithm can run the shape; `rules` go first, and exclude them too.
  std::vector<AlgoRule> measured;
  /// Deterministic mode: reductions only by algorithms that fold in rank order (Algorithm::rankOrder), so every
  /// element's bits depend neither on the algorithm nor on the message size. Forcing rules that name another
  /// algorithm for a reduction are passed over.
  bool deterministic = false;
};

/// The rules of CHORUS_ALGO, or of NCCL_ALGO when CHORUS_ALGO is unset, in `settings` (a communicator's or the
/// process's).
Status rulesFromSettings(const Settings& settings, std::vector<AlgoRule>* rules);

/// Predicted time of `a` on `shape` in µs (infinite when it has no cost function).
double predict(const algo::Algorithm& a, const algo::CollShape& shape, const algo::CostInputs& costs);

/// Whether `selector` lets `a` run `shape` at all (it applies to the shape, and deterministic mode allows it).
bool allowed(const algo::Algorithm& a, const algo::CollShape& shape, const Selector& selector);

/// The algorithm for `shape`; null when the collective has none that can run it. With a call's own `selection`:
/// the fastest of the algorithms it allows, in place of the rules and measured choices; when it allows none that
/// can run the shape, null if it is required, else the choice without it.
const algo::Algorithm* choose(const algo::CollShape& shape, const Selector& selector,
                              const CallSelection* selection = nullptr);

/// The names of the algorithms that could run `shape` (allowed()), comma-separated: for an error that says what
/// a selection might name.
std::string runnableNames(const algo::CollShape& shape, const Selector& selector);

}  // namespace chorus::tuner

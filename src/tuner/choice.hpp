// Which algorithm runs a collective. For now a size rule per collective plus the CHORUS_ALGO override; the cost
// model over the topology replaces the rule without changing this interface.
#pragma once

#include "algorithms/plan.hpp"

namespace chorus::tuner {

/// What the tuner knows of where the ranks run; the same on every rank.
struct Placement {
  bool oversubscribed = false;  // some host runs more ranks than it has cores: every extra round costs a switch
};

/// The algorithm for `shape`: the first CHORUS_ALGO name (a comma list) that this collective has, else the default
/// rule. Deterministic: every rank of a call picks the same one.
const algo::Algorithm* choose(const algo::CollShape& shape, const Placement& placement = {});

}  // namespace chorus::tuner

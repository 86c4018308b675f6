// The α/β table the selector uses: defaults from the system graph (shared-memory copies inside a host, the
// slowest host's network link between hosts), or the values chorus-tune measured, from CHORUS_TUNING_FILE.
//
// Tuning file: one "key value" per line, '#' starts a comment; keys intra.alpha_us, intra.beta_GBps,
// inter.alpha_us, inter.beta_GBps, peer.alpha_us, peer.beta_GBps, reduce_GBps, oversubscribed_round_us,
// oversubscribed_message_us, oversubscribed_pairs_factor (at least 1). Keys left out keep their default. And measured
// choices, "choices.<ranks>x<hosts> <rules>": for a communicator of that many ranks over that many hosts, the
// algorithms `chorus-tune --choices` measured fastest per collective and size, in CHORUS_ALGO's grammar
// (tuner/algo_override.hpp). The selector takes them over the cost model's, where the model's terms miss what decides:
// when ranks outnumber cores, how the scheduler interleaves them.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "algorithms/cost.hpp"
#include "chorus/status.hpp"
#include "topology/graph.hpp"
#include "tuner/algo_override.hpp"

namespace chorus::tuner {

struct CostTable {
  algo::LinkCost intra{0.3, 8.0};
  algo::LinkCost inter{20.0, 1.25};
  algo::LinkCost peer = algo::CostInputs{}.peer;  // device memory of one host (algorithms/cost.hpp)
  double reduceGBps = 10.0;
  double oversubscribedRound = 5.0;  // µs a dependent round costs more when a host runs more ranks than cores
  // How much more a byte costs in a round where every rank sends to every other, same condition: all ranks copy at
  // once though only some run, where a ring's ranks take turns. Direct against ring AllGather and AllReduce at 4
  // ranks on 2 cores (perf/archive/2026-11-27-oversubscribed-ranks-direct-algorithms-lose-from-256-kib.md).
  double oversubscribedPairs = 1.5;
  // µs each message a rank sends in a round costs more, same condition: its stores and its wait for the reader take
  // the time of a core its other ranks need, where with a core each its messages overlap: the direct AllReduce
  // (2 rounds of n-1 messages) forced against recursive doubling (log2 n rounds of one) at 4 and 8 ranks on 2 cores
  // (perf/archive/2026-12-03-oversubscribed-ranks-each-message-of-a-round-costs-its-core.md).
  double oversubscribedMessage = 1.0;
  /// Measured choices by launch shape (choicesKey) -> rules in CHORUS_ALGO's grammar.
  std::map<std::string, std::string> choices;
};

/// The key of the measured choices for `nranks` ranks over `hosts` hosts: "8x1".
std::string choicesKey(int nranks, int hosts);
/// The measured choices `table` has for that launch shape (none: empty).
std::vector<AlgoRule> measuredRules(const CostTable& table, int nranks, int hosts);

/// Defaults for `system`: the inter-host link is the slowest network link of any host.
CostTable defaultCosts(const topology::SystemGraph& system);
/// Overrides the keys present in the tuning file `text`; errors name the line.
Status parseTuning(const std::string& text, CostTable* table);
std::string formatTuning(const CostTable& table);
/// The inputs of the cost model for a placement (oversubscribed or not).
algo::CostInputs costInputs(const CostTable& table, bool oversubscribed);

}  // namespace chorus::tuner

// chorus-tune --choices: the algorithm measured fastest per collective and size on a communicator as launched,
// written as the tuning file's measured choices (tuner/costs.hpp). The cost model predicts each algorithm from
// α, β and the reduction rate; where ranks outnumber cores, what decides is how the scheduler interleaves them,
// which only a measurement sees.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "chorus/communicator.hpp"

namespace chorus::tools {

struct ChoiceSweep {
  size_t minBytes = 8;         // sizes as the perf tools count them, x4 from min to max
  size_t maxBytes = 16 << 20;  // beyond it the largest measured choice holds
  int repeats = 5;             // interleaved: every algorithm once per repeat, the median kept
};

/// Times every algorithm that can run AllReduce, ReduceScatter, AllGather, AlltoAll and Broadcast (float32, sum)
/// at each size of `sweep` on the ranks of `comm`, each algorithm on a communicator of its own that forces it.
/// `hostOfRank`: the host of each rank (null: one host). Collective: every rank of `comm` calls it alike. On rank
/// 0, `rules` gets the fastest per size in CHORUS_ALGO's grammar and `report` a table of every median.
Status measureChoices(Communicator& comm, std::shared_ptr<const std::vector<int>> hostOfRank, const ChoiceSweep& sweep,
                      std::string* rules, std::string* report);

}  // namespace chorus::tools

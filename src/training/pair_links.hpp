// Pair links: a communicator of two ranks for each direction between the ranks of a pair, split off a larger one.
// The pipeline sends activations on them, the parameter server pushes and pulls on them: traffic between two ranks
// then neither waits behind nor fails with traffic between other ranks.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>

#include "chorus/communicator.hpp"

namespace chorus::training {

/// (from, to) -> the link that carries from's messages to `to`; a link holds only those two ranks.
using PairLinks = std::map<std::pair<int, int>, std::unique_ptr<Communicator>>;

/// Opens both directions of every pair {a, b} of `pairs` (a != b) that holds this rank. Collective over `comm`:
/// every rank passes the same pairs. The ranks pair up in rounds, each rank in at most one pair per round.
Status openPairLinks(Communicator& comm, const std::set<std::pair<int, int>>& pairs, const std::string& context,
                     PairLinks* links);

/// A peer's rank on a link of two ranks: the lower of the two is rank 0.
inline int linkRank(int self, int peer) { return peer < self ? 0 : 1; }

}  // namespace chorus::training

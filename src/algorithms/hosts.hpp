// The two groups a hierarchical algorithm works in: the ranks of this rank's host (local group), and the ranks
// at the same local position on every host (cross group), from the shape's host layout.
#pragma once

#include <vector>

#include "algorithms/plan.hpp"

namespace chorus::algo {

struct HostGroups {
  std::vector<std::vector<int>> ranksOfHost;  // per host, its ranks in rank order
  int host = 0;                               // this rank's host
  int localIndex = 0;                         // this rank's position in ranksOfHost[host]
  std::vector<int> local;                     // ranksOfHost[host]
  std::vector<int> cross;                     // ranksOfHost[h][localIndex] for every host h
};

/// Null when the hosts do not all hold the same number of ranks (hierarchical algorithms need that).
bool hostGroupsOf(const CollShape& shape, HostGroups* out);

/// Hierarchical algorithms apply with two or more hosts of two or more ranks each, all with the same count.
bool hierarchicalApplies(const CollShape& shape);

/// Every rank's next rank in the ring of its host and in the ring of its cross group (for cost estimates).
struct HostRings {
  int hosts = 1, perHost = 1;
  std::vector<int> localNext, crossNext;
};
HostRings hostRingsOf(const CollShape& shape);

}  // namespace chorus::algo

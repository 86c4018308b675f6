#include "algorithms/hosts.hpp"

namespace chorus::algo {

bool hostGroupsOf(const CollShape& s, HostGroups* out) {
  out->ranksOfHost.clear();
  for (int r = 0; r < s.nranks; ++r) {
    const int h = s.hostOfRank ? (*s.hostOfRank)[r] : 0;
    if (h < 0) return false;
    if (static_cast<size_t>(h) >= out->ranksOfHost.size()) out->ranksOfHost.resize(h + 1);
    out->ranksOfHost[h].push_back(r);
  }
  for (const auto& ranks : out->ranksOfHost) {
    if (ranks.size() != out->ranksOfHost.front().size()) return false;
  }
  out->host = s.hostOfRank ? (*s.hostOfRank)[s.rank] : 0;
  out->local = out->ranksOfHost[out->host];
  for (size_t i = 0; i < out->local.size(); ++i) {
    if (out->local[i] == s.rank) out->localIndex = static_cast<int>(i);
  }
  out->cross.clear();
  for (const auto& ranks : out->ranksOfHost) out->cross.push_back(ranks[out->localIndex]);
  return true;
}

bool hierarchicalApplies(const CollShape& s) {
  HostGroups g;
  return hostGroupsOf(s, &g) && g.ranksOfHost.size() >= 2 && g.local.size() >= 2;
}

}  // namespace chorus::algo

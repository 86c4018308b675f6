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

HostRings hostRingsOf(const CollShape& s) {
  HostRings rings;
  HostGroups g;
  if (!hostGroupsOf(s, &g)) return rings;
  rings.hosts = static_cast<int>(g.ranksOfHost.size());
  rings.perHost = static_cast<int>(g.local.size());
  rings.localNext.assign(s.nranks, -1);
  rings.crossNext.assign(s.nranks, -1);
  for (int h = 0; h < rings.hosts; ++h) {
    for (int i = 0; i < rings.perHost; ++i) {
      const int r = g.ranksOfHost[h][i];
      rings.localNext[r] = g.ranksOfHost[h][(i + 1) % rings.perHost];
      rings.crossNext[r] = g.ranksOfHost[(h + 1) % rings.hosts][i];
    }
  }
  return rings;
}

}  // namespace chorus::algo

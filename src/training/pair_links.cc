#include "pair_links.hpp"

#include <algorithm>
#include <vector>

namespace chorus::training {

Status openPairLinks(Communicator& comm, const std::set<std::pair<int, int>>& pairs, const std::string& context,
                     PairLinks* links) {
  std::set<std::pair<int, int>> left;
  for (const auto& [a, b] : pairs) left.insert({std::min(a, b), std::max(a, b)});
  while (!left.empty()) {
    std::vector<bool> busy(comm.size(), false);
    std::pair<int, int> mine{-1, -1};
    for (auto it = left.begin(); it != left.end();) {
      if (busy[it->first] || busy[it->second]) {
        ++it;
        continue;
      }
      busy[it->first] = busy[it->second] = true;
      if (it->first == comm.rank() || it->second == comm.rank()) mine = *it;
      it = left.erase(it);
    }
    for (int direction = 0; direction < 2; ++direction) {
      std::unique_ptr<Communicator> link;
      CHORUS_TRY(
          comm.split(mine.first >= 0 ? mine.first : Communicator::kNoColor, comm.rank(), &link).withContext(context));
      if (!link) continue;
      (*links)[direction == 0 ? mine : std::pair<int, int>{mine.second, mine.first}] = std::move(link);
    }
  }
  return Status::ok();
}

}  // namespace chorus::training

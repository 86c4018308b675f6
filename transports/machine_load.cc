#include "transports/machine_load.hpp"

#include <algorithm>
#include <set>

namespace chorus::transport {

MachineLoad machineLoad(const std::vector<PeerInfo>& peers, int rank) {
  const std::string& machine = peers[static_cast<size_t>(rank)].machineId;
  std::set<int> cores;
  MachineLoad load{0, 0};
  for (const PeerInfo& peer : peers) {
    if (peer.machineId != machine) continue;
    ++load.ranks;
    cores.insert(peer.cpus.begin(), peer.cpus.end());
  }
  load.cores = std::max<int>(1, static_cast<int>(cores.size()));
  return load;
}

bool anyMachineSharesCores(const std::vector<PeerInfo>& peers) {
  std::set<std::string> seen;
  for (size_t r = 0; r < peers.size(); ++r) {
    if (seen.insert(peers[r].machineId).second && machineLoad(peers, static_cast<int>(r)).ranksShareCores())
      return true;
  }
  return false;
}

}  // namespace chorus::transport

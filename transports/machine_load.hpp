// How many of a communicator's ranks share a machine, and how many cores they may run on between them. The cores are
// the union of the ranks' CPU sets (PeerInfo::cpus), not the machine's count: ranks a launcher binds one to a core
// count every core they were given, and ranks confined together (taskset, a container's cpuset) count only theirs.
// Two ranks confined to one CPU of a 2-core machine, taken for ranks with a core each, spun out their time slices
// waiting for each other: a small AllReduce took two hundred times as long as with the two counted on one core
// (perf/archive/2026-12-02-ranks-confined-to-fewer-cpus-than-the-machine-has.md).
#pragma once

#include <vector>

#include "transports/transport.hpp"

namespace chorus::transport {

struct MachineLoad {
  int ranks = 1;  // the communicator's ranks on the machine
  int cores = 1;  // the CPUs those ranks may run on, together

  /// More ranks than cores: waiting ranks yield early, FIFOs stay small, dependent rounds cost a switch.
  bool ranksShareCores() const { return ranks > cores; }
};

/// The load on `rank`'s machine (PeerInfo::machineId) among `peers`.
MachineLoad machineLoad(const std::vector<PeerInfo>& peers, int rank);

/// Whether any machine among `peers` runs more of them than it gives cores.
bool anyMachineSharesCores(const std::vector<PeerInfo>& peers);

}  // namespace chorus::transport

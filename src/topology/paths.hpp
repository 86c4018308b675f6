// Paths through the system graph: the widest path between two nodes (the bandwidth of its slowest link, then the
// lowest latency), typed as NCCL types them so that its tables read the same.
#pragma once

#include <vector>

#include "topology/graph.hpp"

namespace chorus::topology {

/// Best to worst, as NCCL orders them.
enum class PathType {
  kLocal,         // the same device
  kNVLink,        // NVLink, direct or through NVSwitches
  kPix,           // through at most one PCIe switch
  kPxb,           // through several PCIe switches, not the CPU
  kPhb,           // through a CPU's PCIe host bridge
  kSys,           // across the inter-socket link
  kNet,           // across the network
  kDisconnected,  // no path
};
const char* pathTypeName(PathType type);

struct Path {
  std::vector<int> nodes;  // from .. to
  PathType type = PathType::kDisconnected;
  double bandwidth = 0;  // GB/s: the slowest link
  double latency = 0;    // µs: the sum over links
};

/// The widest path from `from` to `to`. GPUs are only ends, never hops on the way.
Path widestPath(const SystemGraph& graph, int from, int to);

/// The NICs of `gpu`'s host that it reaches best (best path type, then bandwidth): its local rails.
std::vector<int> closestNics(const SystemGraph& graph, int gpu);

}  // namespace chorus::topology

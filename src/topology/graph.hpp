// The system graph: hosts, their CPUs (one per NUMA domain), PCIe switches, GPUs, NICs and NVSwitches, and the
// links between them, each with a bandwidth and a latency. Discovery (hwloc), the importers (hwloc XML, NCCL's
// topology XML, chorus's own XML) and the merge of all ranks' hosts produce one; the tuner and tools read it.
#pragma once

#include <string>
#include <vector>

namespace chorus::topology {

enum class NodeKind { kHost, kCpu, kPciSwitch, kGpu, kNic, kNvSwitch, kNetwork };
enum class LinkKind { kNVLink, kPCIe, kInterSocket, kHostMemory, kNetwork };

const char* nodeKindName(NodeKind kind);
const char* linkKindName(LinkKind kind);

struct Node {
  NodeKind kind = NodeKind::kCpu;
  int host = -1;          // index of the host node this belongs to (itself for a host; -1 for the network)
  std::string name;       // host id, "cpu0", bus id of a PCI device, NIC name
  std::string busId;      // PCI bus id "dddd:bb:dd.f" when known
  int cores = 0;          // hardware threads (what affinity masks count) of a kCpu, or of all CPUs of a kHost
  int numa = -1;          // kCpu: NUMA node index
  int rank = -1;          // kGpu: the rank NCCL's file assigns, else -1
  double speedGbps = 0;   // kNic: port speed
  std::string linkLayer;  // kNic with an RDMA port: "InfiniBand" or "Ethernet" (RoCE)
};

struct Link {
  int a = -1, b = -1;  // node indices; links are undirected
  LinkKind kind = LinkKind::kPCIe;
  double bandwidth = 0;  // GB/s, each direction
  double latency = 0;    // µs
  int lanes = 1;         // NVLink: links bundled here; PCIe: width
};

class SystemGraph {
 public:
  int addNode(const Node& node);
  /// Adds `link`, or widens the link of the same kind already joining the two nodes (its lanes and bandwidth add
  /// up only when `merge` is kSum; kSame keeps the first, for links both ends report).
  enum class Merge { kSum, kSame };
  void addLink(const Link& link, Merge merge = Merge::kSum);

  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<Link>& links() const { return links_; }
  const Node& node(int i) const { return nodes_[i]; }
  Node& node(int i) { return nodes_[i]; }

  /// Nodes of `kind`, on `host` (-1: all hosts), in insertion order.
  std::vector<int> find(NodeKind kind, int host = -1) const;
  int count(NodeKind kind, int host = -1) const { return static_cast<int>(find(kind, host).size()); }
  int countLinks(LinkKind kind) const;
  /// Sum of the lanes of the links of `kind`.
  int countLanes(LinkKind kind) const;
  /// Indices of the links that touch `node`.
  const std::vector<int>& linksOf(int node) const { return adjacency_[node]; }
  /// The node a link leads to from `from`.
  int across(const Link& link, int from) const { return link.a == from ? link.b : link.a; }

  /// Appends `other` (all its hosts) to this graph; returns the offset of its node indices.
  int append(const SystemGraph& other);

 private:
  std::vector<Node> nodes_;
  std::vector<Link> links_;
  std::vector<std::vector<int>> adjacency_;
};

}  // namespace chorus::topology

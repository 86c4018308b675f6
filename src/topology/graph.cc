#include "topology/graph.hpp"

#include <algorithm>

namespace chorus::topology {

const char* nodeKindName(NodeKind kind) {
  switch (kind) {
    case NodeKind::kHost:
      return "host";
    case NodeKind::kCpu:
      return "cpu";
    case NodeKind::kPciSwitch:
      return "pci-switch";
    case NodeKind::kGpu:
      return "gpu";
    case NodeKind::kNic:
      return "nic";
    case NodeKind::kNvSwitch:
      return "nvswitch";
    case NodeKind::kNetwork:
      return "network";
  }
  return "?";
}

const char* linkKindName(LinkKind kind) {
  switch (kind) {
    case LinkKind::kNVLink:
      return "nvlink";
    case LinkKind::kPCIe:
      return "pcie";
    case LinkKind::kInterSocket:
      return "inter-socket";
    case LinkKind::kHostMemory:
      return "host-memory";
    case LinkKind::kNetwork:
      return "network";
  }
  return "?";
}

int SystemGraph::addNode(const Node& node) {
  nodes_.push_back(node);
  adjacency_.emplace_back();
  const int index = static_cast<int>(nodes_.size()) - 1;
  if (node.kind == NodeKind::kHost) nodes_.back().host = index;
  return index;
}

void SystemGraph::addLink(const Link& link, Merge merge) {
  for (int i : adjacency_[link.a]) {
    Link& l = links_[i];
    if (l.kind == link.kind && across(l, link.a) == link.b) {
      if (merge == Merge::kSum) {
        l.lanes += link.lanes;
        l.bandwidth += link.bandwidth;
      }
      return;
    }
  }
  links_.push_back(link);
  const int index = static_cast<int>(links_.size()) - 1;
  adjacency_[link.a].push_back(index);
  if (link.b != link.a) adjacency_[link.b].push_back(index);
}

std::vector<int> SystemGraph::find(NodeKind kind, int host) const {
  std::vector<int> out;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i].kind == kind && (host < 0 || nodes_[i].host == host)) out.push_back(static_cast<int>(i));
  }
  return out;
}

int SystemGraph::countLinks(LinkKind kind) const {
  return static_cast<int>(std::count_if(links_.begin(), links_.end(), [&](const Link& l) { return l.kind == kind; }));
}

int SystemGraph::countLanes(LinkKind kind) const {
  int lanes = 0;
  for (const Link& l : links_)
    if (l.kind == kind) lanes += l.lanes;
  return lanes;
}

int SystemGraph::append(const SystemGraph& other) {
  const int offset = static_cast<int>(nodes_.size());
  for (Node n : other.nodes_) {
    if (n.host >= 0) n.host += offset;
    nodes_.push_back(n);
    adjacency_.emplace_back();
  }
  for (Link l : other.links_) {
    l.a += offset;
    l.b += offset;
    addLink(l);
  }
  return offset;
}

}  // namespace chorus::topology

#include "topology/paths.hpp"

#include <algorithm>
#include <limits>
#include <queue>
#include <tuple>

namespace chorus::topology {
namespace {

// GPUs are ends only (NCCL's "through a peer GPU" paths are not modelled); a NIC is passed only between its PCIe
// link and the network, its only two links.
bool mayPassThrough(NodeKind kind) { return kind != NodeKind::kGpu; }

PathType typeOf(const SystemGraph& g, const std::vector<int>& nodes) {
  if (nodes.size() == 1) return PathType::kLocal;
  bool allNvlink = true, network = false, interSocket = false, viaCpu = false;
  int switches = 0;
  for (size_t i = 0; i + 1 < nodes.size(); ++i) {
    for (int li : g.linksOf(nodes[i])) {
      const Link& l = g.links()[li];
      if (g.across(l, nodes[i]) != nodes[i + 1]) continue;
      allNvlink = allNvlink && l.kind == LinkKind::kNVLink;
      network = network || l.kind == LinkKind::kNetwork;
      interSocket = interSocket || l.kind == LinkKind::kInterSocket;
      break;
    }
    if (i > 0) {
      const NodeKind k = g.node(nodes[i]).kind;
      viaCpu = viaCpu || k == NodeKind::kCpu;
      switches += k == NodeKind::kPciSwitch;
    }
  }
  if (network) return PathType::kNet;
  if (allNvlink) return PathType::kNVLink;
  if (interSocket) return PathType::kSys;
  if (viaCpu) return PathType::kPhb;
  return switches <= 1 ? PathType::kPix : PathType::kPxb;
}

double fabricBandwidth(const SystemGraph& g, int gpu) {
  double sum = 0;
  for (int li : g.linksOf(gpu)) {
    const Link& l = g.links()[li];
    if (l.kind == LinkKind::kNVLink && g.node(g.across(l, gpu)).kind == NodeKind::kNvSwitch) sum += l.bandwidth;
  }
  return sum;
}

}  // namespace

const char* pathTypeName(PathType type) {
  switch (type) {
    case PathType::kLocal:
      return "LOC";
    case PathType::kNVLink:
      return "NVL";
    case PathType::kPix:
      return "PIX";
    case PathType::kPxb:
      return "PXB";
    case PathType::kPhb:
      return "PHB";
    case PathType::kSys:
      return "SYS";
    case PathType::kNet:
      return "NET";
    case PathType::kDisconnected:
      return "DIS";
  }
  return "?";
}

Path widestPath(const SystemGraph& g, int from, int to) {
  Path path;
  if (from == to) {
    path.nodes = {from};
    path.type = PathType::kLocal;
    path.bandwidth = std::numeric_limits<double>::infinity();
    return path;
  }
  // Dijkstra on (widest bottleneck, then least latency, then fewest hops).
  const size_t n = g.nodes().size();
  std::vector<double> width(n, 0), delay(n, std::numeric_limits<double>::infinity());
  std::vector<int> hops(n, std::numeric_limits<int>::max()), previous(n, -1);
  using Entry = std::tuple<double, double, int, int>;  // (-width, delay, hops, node)
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> queue;
  width[from] = std::numeric_limits<double>::infinity();
  delay[from] = 0;
  hops[from] = 0;
  queue.emplace(-width[from], 0.0, 0, from);
  while (!queue.empty()) {
    auto [negWidth, d, h, u] = queue.top();
    queue.pop();
    if (-negWidth < width[u] || (-negWidth == width[u] && (d > delay[u] || (d == delay[u] && h > hops[u])))) {
      continue;  // stale
    }
    if (u == to) break;
    if (u != from && !mayPassThrough(g.node(u).kind)) continue;
    for (int li : g.linksOf(u)) {
      const Link& l = g.links()[li];
      const int v = g.across(l, u);
      const double w = std::min(width[u], l.bandwidth);
      const double dv = delay[u] + l.latency;
      if (w > width[v] || (w == width[v] && (dv < delay[v] || (dv == delay[v] && h + 1 < hops[v])))) {
        width[v] = w;
        delay[v] = dv;
        hops[v] = h + 1;
        previous[v] = u;
        queue.emplace(-w, dv, h + 1, v);
      }
    }
  }
  if (previous[to] < 0) return path;
  for (int v = to; v >= 0; v = previous[v]) path.nodes.push_back(v);
  std::reverse(path.nodes.begin(), path.nodes.end());
  path.bandwidth = width[to];
  path.latency = delay[to];
  path.type = typeOf(g, path.nodes);
  // An NVSwitch fabric carries all of a GPU's switch links at once (NCCL merges the switches into one node too):
  // between two GPUs it gives the smaller of their total bandwidths into the fabric.
  if (path.type == PathType::kNVLink && path.nodes.size() > 2 && g.node(path.nodes[1]).kind == NodeKind::kNvSwitch) {
    path.bandwidth = std::min(fabricBandwidth(g, from), fabricBandwidth(g, to));
  }
  return path;
}

std::vector<int> closestNics(const SystemGraph& g, int gpu) {
  std::vector<int> best;
  PathType bestType = PathType::kDisconnected;
  double bestWidth = 0;
  for (int nic : g.find(NodeKind::kNic, g.node(gpu).host)) {
    const Path p = widestPath(g, gpu, nic);
    if (p.type == PathType::kDisconnected) continue;
    if (p.type < bestType || (p.type == bestType && p.bandwidth > bestWidth)) {
      best.clear();
      bestType = p.type;
      bestWidth = p.bandwidth;
    }
    if (p.type == bestType && p.bandwidth == bestWidth) best.push_back(nic);
  }
  return best;
}

}  // namespace chorus::topology

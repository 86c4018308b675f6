// chorus-topo: the system graph of this host (hwloc discovery) or of a topology file, the paths between ranks
// with their bandwidths, and an export in chorus's XML.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "bootstrap/host_id.hpp"
#include "tools/version_flag.hpp"
#include "topology/graph_xml.hpp"
#include "topology/hwloc_import.hpp"
#include "topology/paths.hpp"
#include "topology/system.hpp"

using namespace chorus::topology;

namespace {

void usage() {
  printf(
      "usage: chorus-topo [--file F] [--hosts N] [--ranks-per-host K] [--host-memory] [--links] [--dump OUT.xml]\n"
      "Prints the topology graph chorus builds for this host (hwloc discovery) or for a file: its devices, the\n"
      "ranks placed on them and the bandwidth and hops between them, as the algorithm selector sees them.\n"
      "  --file F             read F (chorus XML, NCCL topology XML or hwloc XML) instead of discovering this host\n"
      "  --hosts N            view N hosts alike to the one read, joined by a network (default 1)\n"
      "  --ranks-per-host K   ranks on each host (default: its GPUs, else 2)\n"
      "  --host-memory        place ranks on the CPUs even when the host has GPUs\n"
      "  --links              list every link\n"
      "  --dump OUT.xml       write the graph as chorus XML ('-': standard output)\n"
      "  --version            print chorus's version\n"
      "examples: chorus-topo --links;  chorus-topo --file dgx-h100.xml --hosts 2 --dump -\n");
}

std::string describeNode(const SystemGraph& g, int i) {
  const Node& n = g.node(i);
  std::string text = std::string(nodeKindName(n.kind)) + " " + n.name;
  if (n.kind != NodeKind::kHost && n.kind != NodeKind::kNetwork && n.host >= 0) {
    text += " @" + g.node(n.host).name;
  }
  return text;
}

void printSummary(const SystemGraph& g) {
  for (int h : g.find(NodeKind::kHost)) {
    const Node& host = g.node(h);
    printf("host %s: %d cores in %d NUMA domains, %d GPUs, %d NICs, %d NVSwitches, %d PCIe switches\n",
           host.name.c_str(), host.cores, g.count(NodeKind::kCpu, h), g.count(NodeKind::kGpu, h),
           g.count(NodeKind::kNic, h), g.count(NodeKind::kNvSwitch, h), g.count(NodeKind::kPciSwitch, h));
    for (int c : g.find(NodeKind::kCpu, h)) printf("  %-12s %d cores\n", g.node(c).name.c_str(), g.node(c).cores);
    for (int n : g.find(NodeKind::kNic, h)) {
      const Node& nic = g.node(n);
      printf("  nic %-10s %s", nic.name.c_str(), nic.busId.c_str());
      if (nic.speedGbps > 0) printf(" %.0f Gbit/s", nic.speedGbps);
      printf("\n");
    }
  }
  printf("links: %d NVLink (%d lanes), %d PCIe, %d inter-socket, %d network\n", g.countLinks(LinkKind::kNVLink),
         g.countLanes(LinkKind::kNVLink), g.countLinks(LinkKind::kPCIe), g.countLinks(LinkKind::kInterSocket),
         g.countLinks(LinkKind::kNetwork));
}

void printLinks(const SystemGraph& g) {
  printf("\nlinks:\n");
  for (const Link& l : g.links()) {
    printf("  %-12s %-40s -- %-40s %8.1f GB/s %5.1f us x%d\n", linkKindName(l.kind), describeNode(g, l.a).c_str(),
           describeNode(g, l.b).c_str(), l.bandwidth, l.latency, l.lanes);
  }
}

void printRankPaths(const SystemGraph& g, const std::vector<int>& devices) {
  const size_t n = devices.size();
  printf("\nranks:\n");
  for (size_t r = 0; r < n; ++r) printf("  rank %zu on %s\n", r, describeNode(g, devices[r]).c_str());
  printf("\npath type and bandwidth (GB/s) between ranks (ranks on one CPU share its memory):\n       ");
  for (size_t b = 0; b < n; ++b) printf(" %10zu", b);
  printf("\n");
  for (size_t a = 0; a < n; ++a) {
    printf("  %4zu ", a);
    for (size_t b = 0; b < n; ++b) {
      if (a == b) {
        printf(" %10s", "X");
        continue;
      }
      const Path p = widestPath(g, devices[a], devices[b]);
      char cell[32];
      if (p.type == PathType::kDisconnected) {
        snprintf(cell, sizeof(cell), "DIS");
      } else if (p.type == PathType::kLocal) {
        snprintf(cell, sizeof(cell), "MEM");
      } else {
        snprintf(cell, sizeof(cell), "%s %.0f", pathTypeName(p.type), p.bandwidth);
      }
      printf(" %10s", cell);
    }
    printf("\n");
  }
  bool anyGpu = false;
  for (int d : devices) anyGpu = anyGpu || g.node(d).kind == NodeKind::kGpu;
  if (!anyGpu) return;
  printf("\nclosest NICs of each GPU rank:\n");
  for (size_t r = 0; r < n; ++r) {
    if (g.node(devices[r]).kind != NodeKind::kGpu) continue;
    std::string names;
    PathType type = PathType::kDisconnected;
    for (int nic : closestNics(g, devices[r])) {
      names += (names.empty() ? "" : ", ") + g.node(nic).name;
      type = widestPath(g, devices[r], nic).type;
    }
    printf("  rank %zu: %s%s%s\n", r, names.empty() ? "none" : names.c_str(), names.empty() ? "" : " via ",
           names.empty() ? "" : pathTypeName(type));
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (chorus::tools::printVersionIfAsked(argc, argv, "chorus-topo")) return 0;
  std::string file, dump;
  int hosts = 1, ranksPerHost = 0;
  bool hostMemory = false, links = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) {
        fprintf(stderr, "chorus-topo: %s needs a value\n", arg.c_str());
        exit(2);
      }
      return argv[++i];
    };
    auto number = [&](int* out) {
      const char* v = value();
      char* end = nullptr;
      long parsed = strtol(v, &end, 10);
      if (*end != '\0' || parsed < 1 || parsed > 4096) {
        fprintf(stderr, "chorus-topo: %s needs a positive integer, not '%s'\n", arg.c_str(), v);
        exit(2);
      }
      *out = static_cast<int>(parsed);
    };
    if (arg == "--file") {
      file = value();
    } else if (arg == "--hosts") {
      number(&hosts);
    } else if (arg == "--ranks-per-host") {
      number(&ranksPerHost);
    } else if (arg == "--host-memory") {
      hostMemory = true;
    } else if (arg == "--links") {
      links = true;
    } else if (arg == "--dump") {
      dump = value();
    } else if (arg == "-h" || arg == "--help") {
      usage();
      return 0;
    } else {
      fprintf(stderr, "chorus-topo: unknown argument '%s'\n", arg.c_str());
      usage();
      return 2;
    }
  }

  SystemGraph one;
  chorus::Status st =
      file.empty() ? discoverLocalHost(chorus::bootstrap::hostId(), &one) : loadTopologyFile(file, "host", &one);
  if (!st.isOk()) {
    fprintf(stderr, "chorus-topo: %s\n", st.message().c_str());
    return 1;
  }
  if (file.empty() && !haveHwloc()) printf("(built without hwloc: cores only)\n");
  const int hostsRead = one.count(NodeKind::kHost);
  SystemGraph graph = hosts > 1 && hostsRead == 1 ? replicateHost(one, hosts) : one;

  printSummary(graph);
  if (links) printLinks(graph);
  std::vector<int> perHost;
  for (int h : graph.find(NodeKind::kHost)) {
    const int gpus = graph.count(NodeKind::kGpu, h);
    perHost.push_back(ranksPerHost > 0 ? ranksPerHost : (gpus > 0 && !hostMemory ? gpus : 2));
  }
  printRankPaths(graph, placeRanks(graph, perHost, !hostMemory));

  if (!dump.empty()) {
    const std::string xml = exportGraphXml(graph);
    if (dump == "-") {
      fputs(xml.c_str(), stdout);
    } else {
      std::ofstream out(dump);
      if (!(out << xml)) {
        fprintf(stderr, "chorus-topo: cannot write %s\n", dump.c_str());
        return 1;
      }
      printf("\nwrote %s\n", dump.c_str());
    }
  }
  return 0;
}

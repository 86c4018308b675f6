#include "topology/rdma_ports.hpp"

#include <dirent.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>

namespace chorus::topology {
namespace {

std::string firstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

}  // namespace

std::vector<RdmaPort> rdmaPorts(const std::string& device, const std::string& root) {
  std::vector<RdmaPort> ports;
  const std::string dir = root + "/" + device + "/ports";
  DIR* d = opendir(dir.c_str());
  if (!d) return ports;
  while (dirent* e = readdir(d)) {
    char* end = nullptr;
    const long number = strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || number <= 0) continue;
    const std::string at = dir + "/" + e->d_name + "/";
    RdmaPort p;
    p.number = static_cast<int>(number);
    // "4: ACTIVE"; rate: "100 Gb/sec (4X EDR)", "2.5 Gb/sec (1X SDR)"; link_layer: "InfiniBand" or "Ethernet".
    p.active = atoi(firstLine(at + "state").c_str()) == 4;
    p.gbps = strtod(firstLine(at + "rate").c_str(), nullptr);
    p.linkLayer = firstLine(at + "link_layer");
    ports.push_back(p);
  }
  closedir(d);
  std::sort(ports.begin(), ports.end(), [](const RdmaPort& a, const RdmaPort& b) { return a.number < b.number; });
  return ports;
}

bool bestActiveRdmaPort(const std::string& device, RdmaPort* out, const std::string& root) {
  bool found = false;
  for (const RdmaPort& p : rdmaPorts(device, root)) {
    if (!p.active || (found && p.gbps <= out->gbps)) continue;
    *out = p;
    found = true;
  }
  return found;
}

}  // namespace chorus::topology

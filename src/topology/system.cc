#include "topology/system.hpp"

#include <fstream>
#include <sstream>

#include "topology/graph_xml.hpp"
#include "topology/hwloc_import.hpp"
#include "topology/link_model.hpp"
#include "topology/nccl_xml.hpp"

namespace chorus::topology {

SystemGraph joinHosts(const std::vector<SystemGraph>& hosts) {
  SystemGraph system;
  for (const SystemGraph& h : hosts) system.append(h);
  if (hosts.size() < 2) return system;
  Node net;
  net.kind = NodeKind::kNetwork;
  net.name = "network";
  const int network = system.addNode(net);
  for (int host : system.find(NodeKind::kHost)) {
    const std::vector<int> nics = system.find(NodeKind::kNic, host);
    std::vector<int> ends = nics;
    if (ends.empty()) {
      const std::vector<int> cpus = system.find(NodeKind::kCpu, host);
      if (!cpus.empty()) ends.push_back(cpus.front());
    }
    for (int end : ends) {
      const double gbps = system.node(end).kind == NodeKind::kNic ? system.node(end).speedGbps : 0;
      system.addLink(
          {end, network, LinkKind::kNetwork, link_model::networkBandwidth(gbps), link_model::kNetworkLatency, 1});
    }
  }
  return system;
}

SystemGraph replicateHost(const SystemGraph& host, int copies) {
  std::vector<SystemGraph> hosts(static_cast<size_t>(copies), host);
  for (int i = 0; i < copies; ++i) {
    for (int h : hosts[i].find(NodeKind::kHost)) hosts[i].node(h).name.append("-").append(std::to_string(i));
  }
  return joinHosts(hosts);
}

Status loadTopologyFile(const std::string& path, const std::string& hostName, SystemGraph* graph) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return invalidArgument("topology file " + path + ": cannot be opened");
  // The largest machine's files are a few hundred KiB: a larger one is no topology, and is not read into memory.
  constexpr std::streamoff kMostBytes = 64 << 20;
  if (const std::streamoff bytes = in.tellg(); bytes > kMostBytes) {
    return invalidArgument("topology file " + path + ": " + std::to_string(bytes >> 20) +
                           " MiB, more than any topology (64 MiB)");
  }
  in.seekg(0);
  std::ostringstream text;
  text << in.rdbuf();
  const std::string content = text.str();
  // The root element tells the format apart; skip the declaration and comments before it.
  size_t at = 0;
  while (
      (at = content.find('<', at)) != std::string::npos &&
      (content.compare(at, 2, "<?") == 0 || content.compare(at, 4, "<!--") == 0 || content.compare(at, 2, "<!") == 0)) {
    at = content.compare(at, 4, "<!--") == 0 ? content.find("-->", at) : content.find('>', at);
    if (at == std::string::npos) break;
  }
  Status st;
  if (at == std::string::npos) {
    st = invalidArgument("no XML element");
  } else if (content.compare(at, 16, "<chorus-topology") == 0) {
    st = importGraphXml(content, graph);
  } else if (content.compare(at, 7, "<system") == 0) {
    st = importNcclXml(content, hostName, graph);
  } else if (content.compare(at, 9, "<topology") == 0) {
    st = importHwlocXml(content, hostName, graph);
  } else {
    st = invalidArgument("the root element is none of <chorus-topology>, <system> (NCCL), <topology> (hwloc)");
  }
  return st.withContext("topology file " + path);
}

std::vector<int> placeRanks(const SystemGraph& graph, const std::vector<int>& ranksPerHost, bool onGpus) {
  std::vector<int> devices;
  const std::vector<int> hosts = graph.find(NodeKind::kHost);
  for (size_t h = 0; h < hosts.size() && h < ranksPerHost.size(); ++h) {
    const std::vector<int> gpus = graph.find(NodeKind::kGpu, hosts[h]);
    const std::vector<int> cpus = graph.find(NodeKind::kCpu, hosts[h]);
    const bool gpuRanks = onGpus && static_cast<int>(gpus.size()) >= ranksPerHost[h];
    for (int r = 0; r < ranksPerHost[h]; ++r) {
      if (gpuRanks) {
        devices.push_back(gpus[r]);
      } else {
        devices.push_back(cpus.empty() ? hosts[h] : cpus[static_cast<size_t>(r) % cpus.size()]);
      }
    }
  }
  return devices;
}

bool oversubscribed(const SystemGraph& graph, const std::vector<int>& ranksPerHost) {
  const std::vector<int> hosts = graph.find(NodeKind::kHost);
  for (size_t h = 0; h < hosts.size() && h < ranksPerHost.size(); ++h) {
    if (ranksPerHost[h] > std::max(1, graph.node(hosts[h]).cores)) return true;
  }
  return false;
}

}  // namespace chorus::topology

#include "topology/local_host.hpp"

#include <mutex>

#include "bootstrap/host_id.hpp"
#include "core/log.hpp"
#include "core/setting_parsers.hpp"
#include "topology/hwloc_import.hpp"
#include "topology/system.hpp"

namespace chorus::topology {
namespace {

const Setting<std::string> kTopoFile{
    {"CHORUS_TOPO_FILE", "NCCL_TOPO_FILE", "",
     "this host's topology from a file (chorus, NCCL or hwloc XML) instead of hwloc discovery"},
    setting_parsers::kAnyText,
    SettingScope::kProcess,
    setting_parsers::text()};

}  // namespace

Status localHost(const SystemGraph** out) {
  static std::once_flag once;
  static SystemGraph graph;
  static Status status;
  std::call_once(once, [] {
    const std::string host = bootstrap::hostId();
    const std::string& file = settings()[kTopoFile];
    status = file.empty() ? discoverLocalHost(host, &graph) : loadTopologyFile(file, host, &graph);
    if (status.isOk() && graph.count(NodeKind::kHost) != 1) {
      status = invalidArgument("topology file " + file + " describes " + std::to_string(graph.count(NodeKind::kHost)) +
                               " hosts; this host needs one");
    }
    if (status.isOk()) {
      // A file names its host its own way; the system graph names hosts by their identity.
      graph.node(graph.find(NodeKind::kHost).front()).name = host;
      CHORUS_INFO(kInit, "topology of %s: %d cores, %d NUMA domains, %d GPUs, %d NICs", host.c_str(),
                  graph.node(graph.find(NodeKind::kHost).front()).cores, graph.count(NodeKind::kCpu),
                  graph.count(NodeKind::kGpu), graph.count(NodeKind::kNic));
      for (int nic : graph.find(NodeKind::kNic)) {
        const Node& n = graph.node(nic);
        CHORUS_INFO(
            kInit, "NIC %s: %s%s%s", n.name.c_str(),
            n.speedGbps > 0 ? (std::to_string(static_cast<int>(n.speedGbps)) + " Gb/s").c_str() : "speed unknown",
            n.linkLayer.empty() ? "" : ", ", n.linkLayer.c_str());
      }
    }
  });
  *out = &graph;
  return status;
}

}  // namespace chorus::topology

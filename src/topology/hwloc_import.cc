#include "topology/hwloc_import.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>

#include "topology/link_model.hpp"
#include "topology/rdma_ports.hpp"

#ifdef CHORUS_HAVE_HWLOC
#include <hwloc.h>
#endif

namespace chorus::topology {

#ifdef CHORUS_HAVE_HWLOC
namespace {

constexpr unsigned kClass3D = 0x0302, kClassNVSwitch = 0x0680;
constexpr unsigned kVendorNvidia = 0x10de;

bool isPciBridge(hwloc_obj_t o) {
  return o && o->type == HWLOC_OBJ_BRIDGE && o->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_PCI;
}

bool hasOsdev(hwloc_obj_t pci, auto predicate) {
  for (hwloc_obj_t c = pci->io_first_child; c; c = c->next_sibling) {
    if (c->type == HWLOC_OBJ_OS_DEVICE && predicate(c)) return true;
  }
  return false;
}

// A compute GPU: a 3D controller, or a device with a co-processor (CUDA, OpenCL) or management (NVML, RSMI)
// OS device. Display adapters that only have a DRM card (a server's BMC VGA) are not.
bool isGpu(hwloc_obj_t pci) {
  if (pci->attr->pcidev.class_id == kClass3D) return true;
  return hasOsdev(pci, [](hwloc_obj_t d) {
    if (d->attr->osdev.type == HWLOC_OBJ_OSDEV_COPROC) return true;
    return d->attr->osdev.type == HWLOC_OBJ_OSDEV_GPU && strncmp(d->name, "card", 4) != 0 &&
           strncmp(d->name, "controlD", 8) != 0 && strncmp(d->name, "renderD", 7) != 0;
  });
}

bool isNic(hwloc_obj_t pci) {
  if ((pci->attr->pcidev.class_id >> 8) == 0x02) return true;
  return hasOsdev(pci, [](hwloc_obj_t d) {
    return d->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK || d->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS;
  });
}

std::string busIdOf(hwloc_obj_t pci) {
  char text[32];
  snprintf(text, sizeof(text), "%04x:%02x:%02x.%01x", pci->attr->pcidev.domain, pci->attr->pcidev.bus,
           pci->attr->pcidev.dev, pci->attr->pcidev.func);
  return text;
}

// The NIC's name: its verbs device (mlx5_0), else its network interface (eth0), else its bus id.
std::string nicName(hwloc_obj_t pci, std::string* verbs, std::string* interface) {
  for (hwloc_obj_t c = pci->io_first_child; c; c = c->next_sibling) {
    if (c->type != HWLOC_OBJ_OS_DEVICE) continue;
    if (c->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS && verbs->empty()) *verbs = c->name;
    if (c->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK && interface->empty()) *interface = c->name;
  }
  if (!verbs->empty()) return *verbs;
  if (!interface->empty()) return *interface;
  return busIdOf(pci);
}

// Port speed of a local network interface from sysfs (Mbit/s there), 0 when unknown (virtual links say -1).
double localInterfaceGbps(const std::string& interface) {
  if (interface.empty()) return 0;
  std::ifstream in("/sys/class/net/" + interface + "/speed");
  long mbps = 0;
  if (!(in >> mbps) || mbps <= 0) return 0;
  return mbps / 1000.0;
}

class Builder {
 public:
  Builder(hwloc_topology_t t, SystemGraph* g, bool local) : t_(t), g_(*g), local_(local) {}

  Status run(const std::string& hostName) {
    Node host;
    host.kind = NodeKind::kHost;
    host.name = hostName;
    host_ = g_.addNode(host);
    addCpus();
    for (hwloc_obj_t pci = nullptr; (pci = hwloc_get_next_pcidev(t_, pci));) addPciDevice(pci);
    addNvlinks();
    return Status::ok();
  }

 private:
  void addCpus() {
    const int numas = hwloc_get_nbobjs_by_type(t_, HWLOC_OBJ_NUMANODE);
    for (int i = 0; i < numas; ++i) {
      hwloc_obj_t numa = hwloc_get_obj_by_type(t_, HWLOC_OBJ_NUMANODE, i);
      Node n;
      n.kind = NodeKind::kCpu;
      n.host = host_;
      n.numa = static_cast<int>(numa->os_index);
      n.name = "cpu" + std::to_string(numa->os_index);
      n.cores = hwloc_get_nbobjs_inside_cpuset_by_type(t_, numa->cpuset, HWLOC_OBJ_PU);
      const int index = g_.addNode(n);
      g_.node(host_).cores += n.cores;
      cpuOfNuma_[numa->os_index] = index;
      for (int other : cpus_) {
        g_.addLink({other, index, LinkKind::kInterSocket, link_model::interSocketBandwidth(),
                    link_model::kInterSocketLatency, 1});
      }
      cpus_.push_back(index);
      if (hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(t_, HWLOC_OBJ_PACKAGE, numa)) packageCpu_[pkg] = index;
    }
  }

  // The CPU (NUMA domain) closest to an I/O object.
  int cpuOf(hwloc_obj_t io) {
    hwloc_obj_t anchor = hwloc_get_non_io_ancestor_obj(t_, io);
    if (anchor && anchor->nodeset) {
      const int first = hwloc_bitmap_first(anchor->nodeset);
      if (auto it = cpuOfNuma_.find(static_cast<unsigned>(first)); first >= 0 && it != cpuOfNuma_.end()) {
        return it->second;
      }
    }
    return cpus_.front();
  }

  // A PCIe switch is a tree of PCI-to-PCI bridges below a root port (a bridge right under a host bridge); the whole
  // tree becomes one node, as NCCL flattens switch hierarchies. Returns -1 when `pci` hangs off a root port.
  int switchOf(hwloc_obj_t pci) {
    hwloc_obj_t top = nullptr;
    for (hwloc_obj_t p = pci->parent; p && p->type == HWLOC_OBJ_BRIDGE; p = p->parent) {
      if (isPciBridge(p) && isPciBridge(p->parent)) top = p;
    }
    if (!top) return -1;
    if (auto it = switches_.find(top); it != switches_.end()) return it->second;
    Node n;
    n.kind = NodeKind::kPciSwitch;
    n.host = host_;
    n.name = n.busId = busIdOf(top) == "0000:00:00.0" ? "switch" : busIdOf(top);
    const int index = g_.addNode(n);
    const float speed = top->attr->bridge.upstream.pci.linkspeed;
    g_.addLink({index, cpuOf(top), LinkKind::kPCIe, speed > 0 ? speed : link_model::pcieBandwidth(0, 0),
                link_model::kPCIeLatency, 1});
    switches_[top] = index;
    return index;
  }

  void addPciDevice(hwloc_obj_t pci) {
    const unsigned cls = pci->attr->pcidev.class_id;
    NodeKind kind;
    Node n;
    if (isGpu(pci)) {
      kind = NodeKind::kGpu;
    } else if (isNic(pci)) {
      kind = NodeKind::kNic;
      std::string verbs, interface;
      n.name = nicName(pci, &verbs, &interface);
      if (RdmaPort port; local_ && !verbs.empty() && bestActiveRdmaPort(verbs, &port)) {
        n.speedGbps = port.gbps;
        n.linkLayer = port.linkLayer;
      } else if (local_) {
        n.speedGbps = localInterfaceGbps(interface);
      }
    } else if (cls == kClassNVSwitch && pci->attr->pcidev.vendor_id == kVendorNvidia) {
      kind = NodeKind::kNvSwitch;
    } else {
      return;  // storage, USB, ...: not on any path the collectives use
    }
    n.kind = kind;
    n.host = host_;
    n.busId = busIdOf(pci);
    if (n.name.empty()) n.name = n.busId;
    const int index = g_.addNode(n);
    byObject_[pci] = index;
    const int sw = switchOf(pci);
    const float speed = pci->attr->pcidev.linkspeed;
    g_.addLink({index, sw >= 0 ? sw : cpuOf(pci), LinkKind::kPCIe, speed > 0 ? speed : link_model::pcieBandwidth(0, 0),
                link_model::kPCIeLatency, 1});
  }

  // The graph node of an object of the NVLink matrix: a GPU's OS device stands for its PCI device; a PCI device
  // that is neither GPU nor known NVSwitch is an NVSwitch (DGX-2 has one with an all-zero class); a package is
  // its CPU.
  int nodeOfNvlinkEnd(hwloc_obj_t o) {
    if (o->type == HWLOC_OBJ_OS_DEVICE && o->parent) o = o->parent;
    if (o->type == HWLOC_OBJ_PACKAGE) {
      auto it = packageCpu_.find(o);
      return it == packageCpu_.end() ? -1 : it->second;
    }
    if (o->type != HWLOC_OBJ_PCI_DEVICE) return -1;
    if (auto it = byObject_.find(o); it != byObject_.end()) return it->second;
    Node n;
    n.kind = NodeKind::kNvSwitch;
    n.host = host_;
    n.name = n.busId = busIdOf(o);
    const int index = g_.addNode(n);
    byObject_[o] = index;
    const int sw = switchOf(o);
    g_.addLink({index, sw >= 0 ? sw : cpuOf(o), LinkKind::kPCIe, link_model::pcieBandwidth(0, 0),
                link_model::kPCIeLatency, 1});
    return index;
  }

  void addNvlinks() {
    unsigned count = 1;
    hwloc_distances_s* d = nullptr;
    if (hwloc_distances_get_by_name(t_, "NVLinkBandwidth", &count, &d, 0) != 0 || count == 0) return;
    const unsigned n = d->nbobjs;
    for (unsigned i = 0; i < n; ++i) {
      for (unsigned j = i + 1; j < n; ++j) {
        const double mbps = static_cast<double>(std::max(d->values[i * n + j], d->values[j * n + i]));
        if (mbps <= 0) continue;
        const int a = nodeOfNvlinkEnd(d->objs[i]), b = nodeOfNvlinkEnd(d->objs[j]);
        if (a < 0 || b < 0 || a == b) continue;
        const double gbs = mbps / 1000.0;
        const int lanes = std::max(1, static_cast<int>(std::lround(gbs / link_model::nvlinkLaneBandwidth(0))));
        g_.addLink({a, b, LinkKind::kNVLink, gbs, link_model::kNVLinkLatency, lanes}, SystemGraph::Merge::kSame);
      }
    }
    hwloc_distances_release(t_, d);
  }

  hwloc_topology_t t_;
  SystemGraph& g_;
  bool local_;
  int host_ = -1;
  std::vector<int> cpus_;
  std::map<unsigned, int> cpuOfNuma_;
  std::map<hwloc_obj_t, int> packageCpu_, switches_, byObject_;
};

struct Topology {
  hwloc_topology_t t = nullptr;
  ~Topology() {
    if (t) hwloc_topology_destroy(t);
  }
};

Status load(const std::string* xmlText, const std::string& hostName, SystemGraph* graph) {
  Topology topo;
  if (hwloc_topology_init(&topo.t) != 0) return systemError("hwloc: topology init failed");
  hwloc_topology_set_io_types_filter(topo.t, HWLOC_TYPE_FILTER_KEEP_ALL);
  if (xmlText && hwloc_topology_set_xmlbuffer(topo.t, xmlText->c_str(), static_cast<int>(xmlText->size()) + 1) != 0) {
    return invalidArgument("hwloc XML: hwloc cannot read it (" + std::string(strerror(errno)) +
                           "); a 2.x export is needed");
  }
  if (hwloc_topology_load(topo.t) != 0) {
    return xmlText ? invalidArgument("hwloc XML: loading failed (" + std::string(strerror(errno)) + ")")
                   : systemError("hwloc: discovery of this host failed (" + std::string(strerror(errno)) + ")");
  }
  Builder builder(topo.t, graph, xmlText == nullptr);
  return builder.run(hostName);
}

}  // namespace

bool haveHwloc() { return true; }

Status discoverLocalHost(const std::string& hostName, SystemGraph* graph) { return load(nullptr, hostName, graph); }

Status importHwlocXml(const std::string& text, const std::string& hostName, SystemGraph* graph) {
  return load(&text, hostName, graph);
}

#else  // without hwloc: the host is one CPU node with the online cores

bool haveHwloc() { return false; }

Status discoverLocalHost(const std::string& hostName, SystemGraph* graph) {
  Node host;
  host.kind = NodeKind::kHost;
  host.name = hostName;
  host.cores = static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
  const int h = graph->addNode(host);
  Node cpu;
  cpu.kind = NodeKind::kCpu;
  cpu.host = h;
  cpu.numa = 0;
  cpu.name = "cpu0";
  cpu.cores = host.cores;
  graph->addNode(cpu);
  return Status::ok();
}

Status importHwlocXml(const std::string&, const std::string&, SystemGraph*) {
  return invalidUsage("hwloc XML: this build of chorus has no hwloc (install libhwloc-dev and rebuild)");
}

#endif

}  // namespace chorus::topology

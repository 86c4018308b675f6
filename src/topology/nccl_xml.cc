#include "topology/nccl_xml.hpp"

#include <algorithm>
#include <bit>
#include <cctype>
#include <map>

#include "core/log.hpp"
#include "topology/link_model.hpp"
#include "topology/xml_util.hpp"

namespace chorus::topology {
namespace {

constexpr long kClassNVSwitch = 0x0680;  // "other bridge": NVIDIA's NVSwitches

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(tolower(static_cast<unsigned char>(c)));
  return s;
}

// Cores of an affinity mask written as comma-separated 32-bit hex words.
int coresOf(const std::string& affinity) {
  int cores = 0;
  size_t start = 0;
  while (start <= affinity.size()) {
    size_t comma = affinity.find(',', start);
    const std::string word = affinity.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    cores += std::popcount(static_cast<unsigned long>(strtoul(word.c_str(), nullptr, 16)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return cores;
}

struct PendingNvlink {
  int gpu;
  std::string target;
  long tclass;
  int lanes;
  int sm;
  pugi::xml_node element;
};

class Importer {
 public:
  Importer(const std::string& text, SystemGraph* graph) : text_(text), g_(*graph) {}

  Status run(const pugi::xml_node& system, const std::string& hostName) {
    Node host;
    host.kind = NodeKind::kHost;
    host.name = hostName;
    host_ = g_.addNode(host);
    std::vector<int> cpus;
    for (pugi::xml_node cpu : system.children("cpu")) {
      long numa = 0;
      CHORUS_TRY(xml::intAttribute(cpu, "numaid", static_cast<long>(cpus.size()), text_, &numa));
      Node n;
      n.kind = NodeKind::kCpu;
      n.host = host_;
      n.numa = static_cast<int>(numa);
      n.name = "cpu" + std::to_string(numa);
      n.cores = coresOf(cpu.attribute("affinity").value());
      const int index = g_.addNode(n);
      g_.node(host_).cores += n.cores;
      cpus.push_back(index);
      CHORUS_TRY(walk(cpu, index, -1));
    }
    if (cpus.empty()) return invalidArgument(xml::describe(system, text_) + ": no <cpu> element");
    for (size_t i = 0; i < cpus.size(); ++i) {
      for (size_t j = i + 1; j < cpus.size(); ++j) {
        g_.addLink({cpus[i], cpus[j], LinkKind::kInterSocket, link_model::interSocketBandwidth(),
                    link_model::kInterSocketLatency, 1});
      }
    }
    return resolveNvlinks();
  }

 private:
  // Adds the devices below `parent` (an element under which PCI devices hang). `attach` is the graph node they
  // link to; `inSwitch` is the switch node when `parent` is a bridge inside a switch hierarchy (flattened into it).
  Status walk(const pugi::xml_node& parent, int attach, int inSwitch) {
    for (pugi::xml_node pci : parent.children("pci")) CHORUS_TRY(addPci(pci, attach, inSwitch));
    // A NIC directly under a CPU (socket NICs in NCCL's dumps have no PCI device).
    if (std::string(parent.name()) == "cpu") {
      for (pugi::xml_node nic : parent.children("nic")) CHORUS_TRY(addNics(nic, "", attach, 0));
    }
    return Status::ok();
  }

  Status addPci(const pugi::xml_node& pci, int attach, int inSwitch) {
    const std::string busId = lower(pci.attribute("busid").value());
    if (busId.empty()) return invalidArgument(xml::describe(pci, text_) + ": <pci> without a busid");
    long cls = 0, vendor = 0, width = 0;
    CHORUS_TRY(xml::intAttribute(pci, "class", 0, text_, &cls));
    CHORUS_TRY(xml::intAttribute(pci, "vendor", 0, text_, &vendor));
    CHORUS_TRY(xml::intAttribute(pci, "link_width", 0, text_, &width));
    const double bandwidth = link_model::pcieBandwidth(
        link_model::parseGigatransfers(pci.attribute("link_speed").value()), static_cast<int>(width));
    const long baseClass = cls >> 16, subClass = cls >> 8;
    auto link = [&](int node) {
      g_.addLink({node, attach, LinkKind::kPCIe, bandwidth, link_model::kPCIeLatency, static_cast<int>(width)});
    };

    if (pugi::xml_node gpu = pci.child("gpu")) return addGpu(gpu, busId, link);
    if (pugi::xml_node nic = pci.child("nic")) return addNics(nic, busId, attach, bandwidth);
    if (subClass == 0x0604) {
      // The top bridge of a hierarchy is the switch; the bridges below it are its ports, flattened into it.
      int sw = inSwitch;
      if (sw < 0) {
        sw = addDevice(NodeKind::kPciSwitch, busId);
        link(sw);
      }
      return walk(pci, sw, sw);
    }
    if (baseClass == 0x03) {
      link(addDevice(NodeKind::kGpu, busId));
    } else if (baseClass == 0x02) {
      Node n;
      n.kind = NodeKind::kNic;
      n.host = host_;
      n.name = n.busId = busId;
      link(g_.addNode(n));
    } else if (subClass == kClassNVSwitch && vendor == 0x10de) {
      nvswitchFor(busId);
    }
    return walk(pci, attach, inSwitch);
  }

  Status addGpu(const pugi::xml_node& gpu, const std::string& busId, auto link) {
    long rank = -1, sm = 0;
    CHORUS_TRY(xml::intAttribute(gpu, "rank", -1, text_, &rank));
    CHORUS_TRY(xml::intAttribute(gpu, "sm", 0, text_, &sm));
    const int node = addDevice(NodeKind::kGpu, busId);
    g_.node(node).rank = static_cast<int>(rank);
    link(node);
    for (pugi::xml_node nv : gpu.children("nvlink")) {
      long count = 1, tclass = 0;
      CHORUS_TRY(xml::intAttribute(nv, "count", 1, text_, &count));
      CHORUS_TRY(xml::intAttribute(nv, "tclass", 0, text_, &tclass));
      const std::string target = lower(nv.attribute("target").value());
      if (target.empty()) return invalidArgument(xml::describe(nv, text_) + ": <nvlink> without a target");
      if (count < 1) return invalidArgument(xml::describe(nv, text_) + ": count must be at least 1");
      nvlinks_.push_back({node, target, tclass, static_cast<int>(count), static_cast<int>(sm), nv});
    }
    return Status::ok();
  }

  Status addNics(const pugi::xml_node& nic, const std::string& busId, int attach, double pciBandwidth) {
    bool any = false;
    for (pugi::xml_node net : nic.children("net")) {
      double speedMbps = 0;
      CHORUS_TRY(xml::numberAttribute(net, "speed", 0, text_, &speedMbps));
      Node n;
      n.kind = NodeKind::kNic;
      n.host = host_;
      n.busId = busId;
      n.name = net.attribute("name").value();
      if (n.name.empty()) n.name = busId.empty() ? "nic" : busId;
      n.speedGbps = speedMbps / 1000.0;
      const int node = g_.addNode(n);
      // A socket NIC under a CPU has no PCI link of its own: its port speed bounds it.
      const double bw = busId.empty() ? link_model::networkBandwidth(n.speedGbps) : pciBandwidth;
      g_.addLink({node, attach, LinkKind::kPCIe, bw, link_model::kPCIeLatency, 1});
      any = true;
    }
    if (!any && !busId.empty()) {
      Node n;
      n.kind = NodeKind::kNic;
      n.host = host_;
      n.name = n.busId = busId;
      g_.addLink({g_.addNode(n), attach, LinkKind::kPCIe, pciBandwidth, link_model::kPCIeLatency, 1});
    }
    return Status::ok();
  }

  int addDevice(NodeKind kind, const std::string& busId) {
    Node n;
    n.kind = kind;
    n.host = host_;
    n.name = n.busId = busId;
    const int index = g_.addNode(n);
    byBusId_[busId] = index;
    return index;
  }

  int nvswitchFor(const std::string& busId) {
    auto it = byBusId_.find(busId);
    if (it != byBusId_.end()) return it->second;
    return addDevice(NodeKind::kNvSwitch, busId);
  }

  Status resolveNvlinks() {
    for (const PendingNvlink& p : nvlinks_) {
      int target = -1;
      if ((p.tclass >> 8) == kClassNVSwitch) {
        target = nvswitchFor(p.target);
      } else if (auto it = byBusId_.find(p.target); it != byBusId_.end()) {
        target = it->second;
      }
      if (target == p.gpu) {
        CHORUS_WARN(kInit, "topology: %s links a GPU to itself; ignored", xml::describe(p.element, text_).c_str());
        continue;
      }
      if (target < 0) {
        CHORUS_WARN(kInit, "topology: %s names a device that is not in the file; ignored",
                    xml::describe(p.element, text_).c_str());
        continue;
      }
      const double bw = p.lanes * link_model::nvlinkLaneBandwidth(p.sm);
      // GPU-GPU links appear at both ends: one link. Links to an NVSwitch appear once.
      g_.addLink({p.gpu, target, LinkKind::kNVLink, bw, link_model::kNVLinkLatency, p.lanes},
                 g_.node(target).kind == NodeKind::kGpu ? SystemGraph::Merge::kSame : SystemGraph::Merge::kSum);
    }
    return Status::ok();
  }

  const std::string& text_;
  SystemGraph& g_;
  int host_ = -1;
  std::map<std::string, int> byBusId_;
  std::vector<PendingNvlink> nvlinks_;
};

}  // namespace

Status importNcclXml(const std::string& text, const std::string& hostName, SystemGraph* graph) {
  pugi::xml_document doc;
  CHORUS_TRY(xml::parse(text, "NCCL topology", &doc));
  pugi::xml_node system = doc.child("system");
  if (!system) {
    return invalidArgument("NCCL topology: the root element is <" + std::string(doc.document_element().name()) +
                           ">, not <system>");
  }
  Importer importer(text, graph);
  return importer.run(system, hostName);
}

}  // namespace chorus::topology

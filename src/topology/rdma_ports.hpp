// What the kernel's RDMA subsystem says about a verbs device's ports (/sys/class/infiniband/<device>/ports/<n>:
// state, rate, link_layer; the figures ibv_query_port returns): a NIC with a verbs device takes its speed and link
// layer from its best active port, which is right where the network interface's speed is not (InfiniBand ports
// have no Ethernet speed; IPoIB reports none).
#pragma once

#include <string>
#include <vector>

namespace chorus::topology {

struct RdmaPort {
  int number = 0;
  bool active = false;
  double gbps = 0;        // the port's rate: width x lane speed
  std::string linkLayer;  // "InfiniBand" or "Ethernet" (RoCE)
};

/// The ports of `device` under `root` (normally /sys/class/infiniband); empty when it has none or is not there.
std::vector<RdmaPort> rdmaPorts(const std::string& device, const std::string& root = "/sys/class/infiniband");

/// The fastest active port of `device`, or false when none is active.
bool bestActiveRdmaPort(const std::string& device, RdmaPort* out, const std::string& root = "/sys/class/infiniband");

}  // namespace chorus::topology

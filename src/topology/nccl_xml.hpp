// Import of NCCL's topology XML (the NCCL_TOPO_FILE / NCCL_TOPO_DUMP_FILE format): <system> holding <cpu> trees
// of <pci> devices with <gpu> (and its <nvlink>s) or <nic>/<net> inside. Vendor skeletons that hold only <cpu> and
// <pci> load too: a PCI device then counts by its class (0x03: GPU, 0x02: NIC, 0x0604: switch).
#pragma once

#include <string>

#include "chorus/status.hpp"
#include "topology/graph.hpp"

namespace chorus::topology {

/// Adds the host that the NCCL topology XML `text` describes to `graph`, named `hostName`. Errors name the element
/// (and its line) that could not be read.
Status importNcclXml(const std::string& text, const std::string& hostName, SystemGraph* graph);

}  // namespace chorus::topology

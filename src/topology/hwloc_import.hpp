// hwloc as the source of a host's topology: discovery of the machine this runs on, and import of hwloc XML
// exports of other machines. NUMA nodes become CPU nodes; the PCI tree (kept whole with hwloc's I/O filter)
// gives switches, GPUs, NICs and NVSwitches; hwloc's "NVLinkBandwidth" matrix gives NVLinks.
#pragma once

#include <string>

#include "chorus/status.hpp"
#include "topology/graph.hpp"

namespace chorus::topology {

/// True when chorus was built with hwloc (else discovery counts cores only and hwloc XML cannot be read).
bool haveHwloc();

/// Adds this machine, named `hostName`, to `graph`.
Status discoverLocalHost(const std::string& hostName, SystemGraph* graph);

/// Adds the machine of the hwloc XML export `text` (format 2.x), named `hostName`, to `graph`.
Status importHwlocXml(const std::string& text, const std::string& hostName, SystemGraph* graph);

}  // namespace chorus::topology

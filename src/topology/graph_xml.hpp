// chorus's own topology file: the system graph as XML, written by `chorus-topo --dump` and read back by
// `chorus-topo --xml` and CHORUS_TOPO_FILE. The format (version 1):
//
//   <chorus-topology version="1">
//     <node id="0" kind="host" name="node-a" cores="64"/>
//     <node id="1" kind="cpu" host="0" name="cpu0" numa="0" cores="32"/>
//     <node id="2" kind="gpu" host="0" name="0000:17:00.0" busid="0000:17:00.0" rank="0"/>
//     <node id="3" kind="nic" host="0" name="mlx5_0" busid="0000:1a:00.0" speed_gbps="200"/>
//     <link a="1" b="2" kind="pcie" bandwidth="31.5" latency="1" lanes="16"/>
//   </chorus-topology>
//
// kind is one of host, cpu, pci-switch, gpu, nic, nvswitch, network (nodes) and nvlink, pcie, inter-socket,
// host-memory, network (links); bandwidth in GB/s per direction, latency in µs. Node ids are 0..N-1 in order.
#pragma once

#include <string>

#include "chorus/status.hpp"
#include "topology/graph.hpp"

namespace chorus::topology {

std::string exportGraphXml(const SystemGraph& graph);
/// Reads a file written by exportGraphXml into `graph` (which must be empty). Errors name the element.
Status importGraphXml(const std::string& text, SystemGraph* graph);

}  // namespace chorus::topology

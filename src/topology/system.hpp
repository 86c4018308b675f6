// Many hosts as one system: host graphs joined through one network node (each NIC links to it at its port speed;
// a host without a NIC gets one link at the default network speed), and where each rank runs in it.
#pragma once

#include <string>
#include <vector>

#include "chorus/status.hpp"
#include "topology/graph.hpp"

namespace chorus::topology {

/// Joins `hosts` (graphs of one host each, their host nodes named distinctly) into one system. With one host,
/// no network node is added.
SystemGraph joinHosts(const std::vector<SystemGraph>& hosts);

/// `copies` hosts alike to `host` (a graph of one host), named "<name>-0", "<name>-1", ...: a multi-host view
/// built from one machine's file.
SystemGraph replicateHost(const SystemGraph& host, int copies);

/// Reads a topology file of any supported format (chorus XML, NCCL XML, hwloc XML: told apart by the root
/// element) as host `hostName` (ignored for chorus XML, which names its hosts).
Status loadTopologyFile(const std::string& path, const std::string& hostName, SystemGraph* graph);

/// The node each rank computes on, for `ranksPerHost[h]` ranks on the h-th host node: the host's GPUs in order
/// when `onGpus` and it has enough of them, else its CPUs round-robin (host-memory ranks).
std::vector<int> placeRanks(const SystemGraph& graph, const std::vector<int>& ranksPerHost, bool onGpus);

/// True when some host runs more ranks than it has cores.
bool oversubscribed(const SystemGraph& graph, const std::vector<int>& ranksPerHost);

}  // namespace chorus::topology

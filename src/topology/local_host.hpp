// The topology of the host this process runs on: discovered with hwloc once per process, or read from
// CHORUS_TOPO_FILE. Communicators exchange it so that every rank builds the same system graph.
#pragma once

#include "chorus/status.hpp"
#include "topology/graph.hpp"

namespace chorus::topology {

/// This host as a graph of one host node named by bootstrap::hostId(). Discovered (or read) on the first call;
/// later calls return the same graph, or the same error.
Status localHost(const SystemGraph** out);

}  // namespace chorus::topology

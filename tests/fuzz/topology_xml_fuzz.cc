// Topology files and the topology blobs ranks exchange at init: chorus XML, NCCL XML and hwloc XML, from any bytes.
// Each loader must answer with a graph or an error, never crash or read out of bounds.
#include <cstddef>
#include <cstdint>
#include <string>

#include "topology/graph_xml.hpp"
#include "topology/hwloc_import.hpp"
#include "topology/nccl_xml.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  chorus::topology::SystemGraph graph;
  (void)chorus::topology::importGraphXml(text, &graph);
  chorus::topology::SystemGraph nccl;
  (void)chorus::topology::importNcclXml(text, "fuzz", &nccl);
  if (chorus::topology::haveHwloc()) {
    chorus::topology::SystemGraph hwloc;
    (void)chorus::topology::importHwlocXml(text, "fuzz", &hwloc);
  }
  return 0;
}

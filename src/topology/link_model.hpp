// Default bandwidths (GB/s, one direction) and latencies (µs) per link class, before any calibration. The NVLink,
// PCIe and inter-socket figures follow the constants NCCL's topology uses; host memory and the network are what a
// copy through shared memory and a tcp socket reach on a common server.
#pragma once

#include <string>

namespace chorus::topology::link_model {

/// One NVLink lane of a GPU of compute capability `sm` (e.g. 80).
double nvlinkLaneBandwidth(int sm);
/// A PCIe link of `lanes` lanes at `gigatransfers` GT/s per lane (2.5, 5, 8, 16, 32, 64), after line coding.
double pcieBandwidth(double gigatransfers, int lanes);
/// Parses a link speed as NCCL's files and sysfs write it ("16.0 GT/s PCIe", "8 GT/s"); 0 when not understood.
double parseGigatransfers(const std::string& text);
/// Between the sockets of one host (QPI/UPI/Infinity Fabric class).
double interSocketBandwidth();
/// A copy through shared memory between two ranks of a host.
double hostMemoryBandwidth();
/// A network port of `gbps` Gbit/s (12 GB/s, NCCL's default, when the speed is unknown).
double networkBandwidth(double gbps);

constexpr double kNVLinkLatency = 0.6;
constexpr double kPCIeLatency = 1.0;
constexpr double kInterSocketLatency = 0.2;
constexpr double kHostMemoryLatency = 0.2;
constexpr double kNetworkLatency = 20.0;  // a tcp round over a kernel socket; verbs are ~10x lower

}  // namespace chorus::topology::link_model

// Which RDMA ports the ib transport uses, and what they are worth: NCCL_IB_HCA's filter (CHORUS_IB_HCA), and a
// port's rate from the width and speed codes ibv_query_port reports. Pure functions: tested without a device.
#pragma once

#include <string>
#include <vector>

#include "chorus/status.hpp"

namespace chorus::transport::ib {

/// One entry of an HCA list: a device name and optionally a port (0: any port).
struct HcaEntry {
  std::string device;
  int port = 0;
};

/// NCCL_IB_HCA's syntax: "mlx5_0:1,mlx5_1". A leading '^' makes the list an exclusion, a leading '=' makes names
/// match exactly instead of as prefixes ("mlx5_1" also matches mlx5_10 otherwise).
struct HcaFilter {
  bool exclude = false;
  bool exact = false;
  std::vector<HcaEntry> entries;

  /// True when `device`:`port` may be used. An empty filter takes every port.
  bool accepts(const std::string& device, int port) const;
};

/// Parses a filter; a malformed port ("mlx5_0:x") is an error naming the entry.
Status parseHcaFilter(const std::string& text, HcaFilter* out);

/// A port's data rate in Gbit/s from ibv_port_attr's active_width and active_speed codes; 0 for codes it does not
/// know.
double portGbps(int activeWidth, int activeSpeed);

}  // namespace chorus::transport::ib

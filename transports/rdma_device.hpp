// Whether this machine has an RDMA device (InfiniBand, RoCE, iWARP): the transports that only pay off on one are
// offered without being forced only then.
#pragma once

#include <dirent.h>

namespace chorus::transport {

inline bool rdmaDevicePresent() {
  DIR* d = opendir("/sys/class/infiniband");
  if (!d) return false;
  bool any = false;
  while (dirent* e = readdir(d)) any = any || e->d_name[0] != '.';
  closedir(d);
  return any;
}

}  // namespace chorus::transport

// c10d's reconfigure API (torch.distributed._reconfigure, for groups made with enable_reconfigure=True): each
// process of a group has a handle that its peers learn out of band; reconfigure(uuid, handles) makes the group a new
// communicator of exactly those processes, whatever the old one was (fewer after a failure, more after a
// replacement joined, another order). The processes meet in the group's store under the uuid, so a handle needs to
// identify its process only.
#pragma once

#include <string>
#include <torch/csrc/distributed/c10d/Types.hpp>

namespace chorus::torch_backend {

/// A handle no other process or group has: "chorus:<host>:<pid>:<random hex>".
std::string newReconfigureHandle();

struct Membership {
  int rank;
  int size;
};

/// This process's place among `handles`: its position in a list, or in the sorted handles of a set (c10d lets the
/// backend choose the order of a set). Throws c10::Error naming the cause when `mine` is absent or a handle repeats.
Membership membershipOf(const c10d::ReconfigureOptions& options, const std::string& mine);

}  // namespace chorus::torch_backend

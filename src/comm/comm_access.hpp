// What chorus's own layers (the C API, the tools) reach of a Communicator beyond its public interface: the state
// behind it. Not part of the public headers, so no program outside can come to depend on it.
#pragma once

#include "chorus/communicator.hpp"
#include "comm/comm_impl.hpp"

namespace chorus {

struct CommAccess {
  static CommImpl& impl(Communicator& comm) { return *comm.impl_; }
};

}  // namespace chorus

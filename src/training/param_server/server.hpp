// The two roles' constructors, used by join() once the links are open.
#pragma once

#include <memory>

#include "../pair_links.hpp"
#include "chorus/training/param_server/param_server.hpp"
#include "key_layout.hpp"
#include "protocol.hpp"
#include "shard.hpp"

namespace chorus::training::param_server {

struct ServerLinks {
  PairLinks workers;  // both directions between each worker and each server
  PairLinks chain;    // primary -> backup: forwards (and the primary's last kDone)
  PairLinks acks;     // backup -> primary: acks
};

std::unique_ptr<Server> makeServer(Communicator& comm, const KeyLayout& layout, const ParamServerConfig& config,
                                   ServerLinks links, const float* initial);
std::unique_ptr<Worker> makeWorker(Communicator& comm, Sequential& model, const KeyLayout& layout,
                                   const ParamServerConfig& config, PairLinks links);

}  // namespace chorus::training::param_server

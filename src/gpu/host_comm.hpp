// A communicator as the device path sees it (comm/comm_impl.hpp is one): its host path, for the set-up's exchanges
// and the staged calls; the plan its selector chooses for a call over peer memory; and its state of failure.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <vector>

#include "algorithms/operation.hpp"
#include "algorithms/peer_plan.hpp"
#include "chorus/request.hpp"
#include "chorus/status.hpp"

namespace chorus::gpu {

class HostComm {
 public:
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// Runs `op` (host buffers) now, on the calling thread.
  virtual Status execute(const Operation& op) = 0;
  /// Queues `ops` (host buffers) behind the communicator's other work, to run once `ready` returned ok.
  virtual Request submitOnStream(std::vector<Operation> ops, std::function<Status(std::vector<Operation>*)> ready) = 0;
  /// This rank's plan of `op` over peer memory, through slots of `slotBytes` (the algorithm of the catalogue the
  /// communicator's selector chooses for it; one-shot AllReduce up to `oneShotBytes`).
  virtual Status planOnPeerMemory(const Operation& op, size_t slotBytes, size_t oneShotBytes,
                                  algo::peer::Plan* plan) = 0;
  /// Whether another rank of the communicator lives in this process (threads, or a thread driving several ranks).
  virtual bool sharesProcess() const = 0;
  virtual bool aborted() const = 0;
  virtual const std::atomic<bool>* abortFlag() const = 0;
  /// The first failure of any call (ok if none).
  virtual Status asyncError() const = 0;
  /// Keeps the first failure that leaves the communicator unusable; returns `st`.
  virtual Status recordFailure(Status st) = 0;
  /// Where the device path keeps its state of this communicator, set up by the first call that uses it.
  virtual std::shared_ptr<void>& peerMemory() = 0;

 protected:
  ~HostComm() = default;
};

}  // namespace chorus::gpu

/// @file request.hpp
/// Request: the handle of an asynchronous operation.
#pragma once

#include <functional>
#include <memory>

#include "chorus/status.hpp"

namespace chorus {

namespace detail {
struct RequestState;
}

/// What an *Async call returns: wait for it, test it, or be called back when it finished. Copies share one
/// operation; an empty (default-constructed) Request stands for an operation that finished at once.
class Request {
 public:
  Request() = default;
  /// A Request on `state`, as chorus's own calls make them.
  explicit Request(std::shared_ptr<detail::RequestState> state) : state_(std::move(state)) {}

  /// Blocks until the operation finished; returns its status. An empty Request is ok at once.
  Status wait();
  /// True once the operation finished (wait() then returns without blocking).
  bool test() const;
  /// Calls `callback` with the operation's status once it finished: at once, in this thread, when it has already;
  /// otherwise on the thread that completes it (the communicator's), which runs nothing else meanwhile, so the
  /// callback must be short and must not call into the same communicator. One callback per Request; a later call
  /// replaces an earlier one not yet called. A framework's futures (PyTorch's Work::getFuture) complete this way.
  void onComplete(std::function<void(const Status&)> callback);

 private:
  std::shared_ptr<detail::RequestState> state_;
};

}  // namespace chorus

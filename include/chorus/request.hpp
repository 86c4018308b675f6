/// @file request.hpp
/// Request: the handle of an asynchronous operation.
#pragma once

#include <memory>

#include "chorus/status.hpp"

namespace chorus {

namespace detail {
struct RequestState;
}

class Request {
 public:
  Request() = default;
  explicit Request(std::shared_ptr<detail::RequestState> state) : state_(std::move(state)) {}

  /// Blocks until the operation finished; returns its status. An empty Request is ok at once.
  Status wait();
  /// True once the operation finished (wait() then returns without blocking).
  bool test() const;

 private:
  std::shared_ptr<detail::RequestState> state_;
};

}  // namespace chorus

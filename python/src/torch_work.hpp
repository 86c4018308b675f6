// The c10d Work of a chorus call: completes, and completes its future, when the chorus Request does, and runs the
// backend's hooks then (torch_hooks.hpp). While torch's profiler records, each Work is an event "chorus:<call>" (as
// Gloo's are "gloo:<call>") with its tensors' shapes, from its start to its completion.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <vector>

#include "chorus/request.hpp"
#include "torch_hooks.hpp"

namespace chorus::torch_backend {

class ChorusWork : public c10d::Work {
 public:
  using Hooks = std::shared_ptr<const BackendHooks>;
  /// A Work for `request`: `outputs` are its result (and its future's value); `inputs` stay alive until it finished.
  /// `what` names the call in error messages and profiler events ("all_reduce"); `hooks` are its backend's.
  static c10::intrusive_ptr<ChorusWork> start(Hooks hooks, Request request, c10d::OpType type, std::string what,
                                              std::vector<at::Tensor> outputs, std::vector<at::Tensor> inputs = {});
  /// A call run now, in the calling thread: `run()` returns its status.
  template <typename Run>
  static c10::intrusive_ptr<ChorusWork> runNow(Hooks hooks, Run run, c10d::OpType type, std::string what,
                                               std::vector<at::Tensor> outputs, std::vector<at::Tensor> inputs) {
    auto work = pending(std::move(hooks), type, std::move(what), std::move(outputs), std::move(inputs));
    work->complete(run());
    return work;
  }
  /// A call inside a coalescing block: it finishes with the block's Work (follow()).
  static c10::intrusive_ptr<ChorusWork> pending(Hooks hooks, c10d::OpType type, std::string what,
                                                std::vector<at::Tensor> outputs, std::vector<at::Tensor> inputs);
  /// Finishes `follower` when this Work finishes (a coalesced call, with its block).
  void follow(c10::intrusive_ptr<ChorusWork> follower);

  ChorusWork(Hooks hooks, c10d::OpType type, std::string what, std::vector<at::Tensor> outputs,
             std::vector<at::Tensor> inputs);

  std::vector<at::Tensor> result() override { return outputs_; }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }
  /// Milliseconds from the call's start to its end (every call is timed: two clock reads).
  float getDuration() const override;

 private:
  void complete(const Status& st);

  Hooks hooks_;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::atomic<float> durationMs_{-1};  // set when the call finished
  std::string what_;
  std::vector<at::Tensor> outputs_;
  std::vector<at::Tensor> inputs_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  std::mutex followersMutex_;
  std::vector<c10::intrusive_ptr<ChorusWork>> followers_;
  bool done_ = false;
  Status status_;
};

}  // namespace chorus::torch_backend

// The c10d Work of a chorus call: completes, and completes its future, when the chorus Request does.
#pragma once

#include <string>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <vector>

#include "chorus/request.hpp"

namespace chorus::torch_backend {

class ChorusWork : public c10d::Work {
 public:
  /// A Work for `request`: `outputs` are its result (and its future's value); `inputs` stay alive until it finished.
  /// `what` names the call in error messages ("allreduce").
  static c10::intrusive_ptr<ChorusWork> start(Request request, c10d::OpType type, std::string what,
                                              std::vector<at::Tensor> outputs, std::vector<at::Tensor> inputs = {});
  /// A call that already ran, with status `st`.
  static c10::intrusive_ptr<ChorusWork> finished(const Status& st, c10d::OpType type, std::string what,
                                                 std::vector<at::Tensor> outputs);
  /// A call inside a coalescing block: it finishes with the block's Work (follow()).
  static c10::intrusive_ptr<ChorusWork> pending(c10d::OpType type, std::string what, std::vector<at::Tensor> outputs,
                                                std::vector<at::Tensor> inputs);
  /// Finishes `follower` when this Work finishes (a coalesced call, with its block).
  void follow(c10::intrusive_ptr<ChorusWork> follower);

  ChorusWork(c10d::OpType type, std::string what, std::vector<at::Tensor> outputs, std::vector<at::Tensor> inputs);

  std::vector<at::Tensor> result() override { return outputs_; }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }

 private:
  void complete(const Status& st);

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

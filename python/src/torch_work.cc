#include "torch_work.hpp"

#include <ATen/core/ivalue.h>
#include <ATen/record_function.h>
#include <c10/util/Exception.h>

#include <mutex>
#include <unordered_set>

namespace chorus::torch_backend {
namespace {

// The profiler's name of a call, or null while nothing records (the common case costs one check). RecordFunction
// keeps the pointer, so each name is stored once for the process's life.
const char* profilingTitle(const std::string& what) {
  if (!at::hasCallbacks()) return nullptr;
  static std::mutex mutex;
  static auto* names = new std::unordered_set<std::string>();
  std::lock_guard<std::mutex> lock(mutex);
  return names->insert("chorus:" + what).first->c_str();
}

}  // namespace

ChorusWork::ChorusWork(Hooks hooks, c10d::OpType type, std::string what, std::vector<at::Tensor> outputs,
                       std::vector<at::Tensor> inputs)
    // The event's shapes: what the call reads, or for a recv (which reads nothing) what it writes, as Gloo's.
    : c10d::Work(-1, type, profilingTitle(what), inputs.empty() ? outputs : inputs),
      hooks_(std::move(hooks)),
      what_(std::move(what)),
      outputs_(std::move(outputs)),
      inputs_(std::move(inputs)),
      future_(c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()))) {}

c10::intrusive_ptr<ChorusWork> ChorusWork::start(Hooks hooks, Request request, c10d::OpType type, std::string what,
                                                 std::vector<at::Tensor> outputs, std::vector<at::Tensor> inputs) {
  auto work =
      c10::make_intrusive<ChorusWork>(std::move(hooks), type, std::move(what), std::move(outputs), std::move(inputs));
  // The callback holds the Work until the call finished, even when torch dropped it.
  request.onComplete([work](const Status& st) { work->complete(st); });
  return work;
}

c10::intrusive_ptr<ChorusWork> ChorusWork::pending(Hooks hooks, c10d::OpType type, std::string what,
                                                   std::vector<at::Tensor> outputs, std::vector<at::Tensor> inputs) {
  return c10::make_intrusive<ChorusWork>(std::move(hooks), type, std::move(what), std::move(outputs),
                                         std::move(inputs));
}

float ChorusWork::getDuration() const {
  const float ms = durationMs_.load();
  TORCH_CHECK(ms >= 0, "chorus ", what_, ": the call has not finished, so it has no duration yet");
  return ms;
}

void ChorusWork::follow(c10::intrusive_ptr<ChorusWork> follower) {
  std::unique_lock<std::mutex> lock(followersMutex_);
  if (!done_) {
    followers_.push_back(std::move(follower));
    return;
  }
  Status st = status_;
  lock.unlock();
  follower->complete(st);
}

void ChorusWork::complete(const Status& st) {
  std::vector<c10::intrusive_ptr<ChorusWork>> followers;
  {
    std::lock_guard<std::mutex> lock(followersMutex_);
    done_ = true;
    status_ = st;
    followers = std::move(followers_);
  }
  inputs_.clear();
  durationMs_ = std::chrono::duration<float, std::milli>(std::chrono::steady_clock::now() - started_).count();
  // The hooks before the future: a thread that wait()ed reads it next, and an abort hook runs before the error
  // reaches the caller.
  if (hooks_) st.isOk() ? hooks_->completed(getCompletionKey(), durationMs_) : hooks_->failed();
  if (st.isOk()) {
    future_->markCompleted(c10::IValue(outputs_));
    finish();
  } else {
    auto error = std::make_exception_ptr(c10::DistBackendError(c10::SourceLocation{__func__, __FILE__, __LINE__},
                                                               "chorus " + what_ + " failed: " + st.message()));
    future_->setError(error);
    finish(error);
  }
  for (auto& f : followers) f->complete(st);
}

}  // namespace chorus::torch_backend

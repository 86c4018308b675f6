// The hooks c10d registers on a backend: abort hooks (ProcessGroup.register_abort_hook; torch's flight recorder
// dumps its trace from one), run when the backend's first call fails, before its error reaches the caller, so a
// framework can record what it needs first (a failed call ends the communicator: the calls after it fail too, and
// run no hooks); and completion hooks (Backend::registerCompletionHook), run when a call succeeds, with the call's
// duration. Both run on the thread that finishes the call (the caller's, or the communicator's); a hook registered
// again under its id replaces the earlier one.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <torch/csrc/distributed/c10d/Hooks.hpp>

namespace chorus::torch_backend {

class BackendHooks {
 public:
  void addAbortHook(int64_t id, c10d::AbortHook hook);
  void removeAbortHook(int64_t id);
  void addCompletionHook(int64_t id, c10d::CompletionHook hook);
  void removeCompletionHook(int64_t id);

  /// A call of the backend failed: runs the abort hooks, the first time.
  void failed() const;
  /// The backend has a new communicator (reconfigure): its first failure runs the abort hooks again.
  void rearm() { failedOnce_ = false; }
  /// A call finished without error: runs the completion hooks with `key` (the Work's completion key).
  void completed(uint64_t key, float durationMs) const;

 private:
  // Sets hook `id` of `hooks`, or removes it for an empty `hook`.
  template <typename Hook>
  void put(std::map<int64_t, Hook>& hooks, int64_t id, Hook hook);

  mutable std::mutex mutex_;
  mutable std::atomic<bool> failedOnce_{false};
  std::map<int64_t, c10d::AbortHook> abortHooks_;
  std::map<int64_t, c10d::CompletionHook> completionHooks_;
};

}  // namespace chorus::torch_backend

#include "torch_hooks.hpp"

#include <c10/util/Exception.h>

#include <exception>
#include <vector>

namespace chorus::torch_backend {
namespace {

// The hooks of `hooks` as they are now: each runs without the lock, so a hook may register or remove hooks.
template <typename Hook>
std::vector<Hook> snapshot(std::mutex& mutex, const std::map<int64_t, Hook>& hooks) {
  std::lock_guard<std::mutex> lock(mutex);
  std::vector<Hook> out;
  out.reserve(hooks.size());
  for (const auto& [id, hook] : hooks) out.push_back(hook);
  return out;
}

// A hook that throws must not end the call's thread (the communicator's, often): its error becomes a warning.
template <typename Call>
void runGuarded(const char* kind, Call call) {
  try {
    call();
  } catch (const std::exception& e) {
    TORCH_WARN("chorus: ", kind, " hook raised: ", e.what());
  } catch (...) {
    TORCH_WARN("chorus: ", kind, " hook raised an exception");
  }
}

}  // namespace

template <typename Hook>
void BackendHooks::put(std::map<int64_t, Hook>& hooks, int64_t id, Hook hook) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (hook)
    hooks[id] = std::move(hook);
  else
    hooks.erase(id);
}

void BackendHooks::addAbortHook(int64_t id, c10d::AbortHook hook) { put(abortHooks_, id, std::move(hook)); }
void BackendHooks::removeAbortHook(int64_t id) { put(abortHooks_, id, {}); }
void BackendHooks::addCompletionHook(int64_t id, c10d::CompletionHook hook) {
  put(completionHooks_, id, std::move(hook));
}
void BackendHooks::removeCompletionHook(int64_t id) { put(completionHooks_, id, {}); }

void BackendHooks::failed() const {
  if (failedOnce_.exchange(true)) return;
  for (const auto& hook : snapshot(mutex_, abortHooks_)) runGuarded("an abort", hook);
}

void BackendHooks::completed(uint64_t key, float durationMs) const {
  for (const auto& hook : snapshot(mutex_, completionHooks_))
    runGuarded("a completion", [&] { hook({key, durationMs}); });
}

}  // namespace chorus::torch_backend

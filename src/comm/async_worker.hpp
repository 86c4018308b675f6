// The thread behind a communicator's *Async calls: runs submitted work in order and completes Requests.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "chorus/request.hpp"

namespace chorus {

namespace detail {
struct RequestState {
  std::mutex mutex;
  std::condition_variable cv;
  bool done = false;
  Status status;
  std::function<void(const Status&)> onComplete;  // Request::onComplete's callback, until done
};
}  // namespace detail

/// A Request that is finished already, with `st`.
Request finishedRequest(const Status& st);

class AsyncWorker {
 public:
  ~AsyncWorker();
  /// Foreground work is what foregroundIdle() waits for; background work (a stream's share of a call that already
  /// returned) is not.
  enum Kind { kForeground, kBackground };
  /// Queues `work`; the thread starts on first use.
  Request submit(std::function<Status()> work, Kind kind = kForeground);
  /// Waits until everything submitted so far has run.
  void drain();
  /// True when nothing submitted is queued or running.
  bool idle() const;
  /// True when no foreground work is queued or running.
  bool foregroundIdle() const;
  Status firstError() const;

 private:
  void loop();
  struct Item {
    std::function<Status()> work;
    std::shared_ptr<detail::RequestState> state;
    Kind kind;
  };
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Item> queue_;
  bool busy_ = false;
  int foreground_ = 0;             // foreground items queued or running
  std::atomic<bool> used_{false};  // lets drain() skip the lock for communicators that never went async
  bool stopping_ = false;
  Status firstError_;
  std::thread thread_;
};

}  // namespace chorus

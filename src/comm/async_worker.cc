#include "comm/async_worker.hpp"

namespace chorus {

AsyncWorker::~AsyncWorker() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

Request finishedRequest(const Status& st) {
  auto state = std::make_shared<detail::RequestState>();
  state->done = true;
  state->status = st;
  return Request(state);
}

Request AsyncWorker::submit(std::function<Status()> work, Kind kind) {
  auto state = std::make_shared<detail::RequestState>();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back({std::move(work), state, kind});
    if (kind == kForeground) ++foreground_;
    used_.store(true, std::memory_order_release);
    if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
  }
  cv_.notify_all();
  return Request(state);
}

void AsyncWorker::drain() {
  if (!used_.load(std::memory_order_acquire)) return;
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [this] { return queue_.empty() && !busy_; });
}

bool AsyncWorker::idle() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return queue_.empty() && !busy_;
}

bool AsyncWorker::foregroundIdle() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return foreground_ == 0;
}

Status AsyncWorker::firstError() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return firstError_;
}

void AsyncWorker::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and nothing left to run
    Item item = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    Status st = item.work();
    std::function<void(const Status&)> callback;
    {
      std::lock_guard<std::mutex> stateLock(item.state->mutex);
      item.state->status = st;
      item.state->done = true;
      callback = std::move(item.state->onComplete);
    }
    item.state->cv.notify_all();
    if (callback) callback(st);
    lock.lock();
    if (!st.isOk() && firstError_.isOk()) firstError_ = st;
    if (item.kind == kForeground) --foreground_;
    busy_ = false;
    cv_.notify_all();
  }
}

Status Request::wait() {
  if (!state_) return Status::ok();
  std::unique_lock<std::mutex> lock(state_->mutex);
  state_->cv.wait(lock, [this] { return state_->done; });
  return state_->status;
}

bool Request::test() const {
  if (!state_) return true;
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->done;
}

void Request::onComplete(std::function<void(const Status&)> callback) {
  if (!state_) {
    callback(Status::ok());
    return;
  }
  std::unique_lock<std::mutex> lock(state_->mutex);
  if (!state_->done) {
    state_->onComplete = std::move(callback);
    return;
  }
  Status st = state_->status;
  lock.unlock();
  callback(st);
}

}  // namespace chorus

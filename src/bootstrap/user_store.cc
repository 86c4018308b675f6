#include "bootstrap/user_store.hpp"

#include <algorithm>
#include <chrono>
#include <thread>

namespace chorus {

Status Store::setIfAbsent(const std::string& key, const std::string&, std::string*) {
  return invalidUsage("the framework's store cannot set '" + key + "' only where it is absent");
}

}  // namespace chorus

namespace chorus::bootstrap {
namespace {

std::string causeKey(const std::string& space) { return space + "/#cause"; }
std::string failuresKey(const std::string& space) { return space + "/#failures"; }

// Polls of a waiting get(): at first often (a peer's key usually follows within microseconds at setup), then no
// more than every few milliseconds, so a long wait costs the store little.
constexpr auto kFirstPause = std::chrono::microseconds(50);
constexpr auto kLongestPause = std::chrono::milliseconds(5);

}  // namespace

Status UserStore::storeError(const Status& st, const char* what, const std::string& key) {
  return st.isOk() ? st : st.withContext(std::string("the framework's store, ") + what + " '" + key + "'");
}

Status UserStore::failureOver(const std::string& key) {
  std::vector<std::string> spaces;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    spaces = spaces_;
  }
  for (const std::string& space : spaces) {
    if (key != space && key.rfind(space + "/", 0) != 0) continue;
    std::string cause;
    bool found = false;
    CHORUS_TRY(storeError(store_->tryGet(causeKey(space), &cause, &found), "get", causeKey(space)));
    if (found) return remoteError(cause);
  }
  return Status::ok();
}

Status UserStore::set(const std::string& key, const std::string& value) {
  CHORUS_TRY(failureOver(key));
  return storeError(store_->set(key, value), "set", key);
}

Status UserStore::get(const std::string& key, std::string* value, const Deadline& deadline) {
  auto pause = std::chrono::duration_cast<std::chrono::microseconds>(kFirstPause);
  for (;;) {
    bool found = false;
    CHORUS_TRY(storeError(store_->tryGet(key, value, &found), "get", key));
    if (found) return Status::ok();
    CHORUS_TRY(failureOver(key));
    if (deadline.expired()) {
      return timeoutError("the framework's store: key '" + key + "' not set before the " +
                          (deadline.cancelled() ? "cancellation" : "timeout"));
    }
    std::this_thread::sleep_for(pause);
    pause = std::min<std::chrono::microseconds>(pause * 2, kLongestPause);
  }
}

Status UserStore::add(const std::string& key, int64_t delta, int64_t* result) {
  CHORUS_TRY(failureOver(key));
  return storeError(store_->add(key, delta, result), "add", key);
}

Status UserStore::setIfAbsent(const std::string& key, const std::string& value, std::string* stored) {
  CHORUS_TRY(failureOver(key));
  Status st = store_->setIfAbsent(key, value, stored);
  return st.code() == ErrorCode::kInvalidUsage ? st : storeError(st, "set-if-absent", key);
}

Status UserStore::join(const std::string& space, int /*rank*/, int /*nranks*/) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (std::find(spaces_.begin(), spaces_.end(), space) == spaces_.end()) spaces_.push_back(space);
  }
  return failureOver(space);
}

Status UserStore::ready(const std::string& space) { return failureOver(space); }

Status UserStore::fail(const std::string& space, const std::string& why, std::string* firstCause) {
  int64_t failures = 0;
  CHORUS_TRY(storeError(store_->add(failuresKey(space), 1, &failures), "add", failuresKey(space)));
  *firstCause = why;
  if (failures == 1) return storeError(store_->set(causeKey(space), why), "set", causeKey(space));
  // An earlier failure's cause follows its count at once; said on the way out, so the wait is short.
  std::string first;
  if (get(causeKey(space), &first, Deadline::after(1.0)).isOk()) *firstCause = first;
  return Status::ok();
}

}  // namespace chorus::bootstrap

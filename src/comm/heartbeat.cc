#include "comm/heartbeat.hpp"

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "core/deadline.hpp"
#include "core/log.hpp"

namespace chorus {

Heartbeat::Heartbeat(std::unique_ptr<bootstrap::Bootstrap> space, double periodSeconds, double timeoutSeconds,
                     std::function<void(const Status&)> onSilent)
    : space_(std::move(space)), period_(periodSeconds), timeout_(timeoutSeconds), onSilent_(std::move(onSilent)) {
  thread_ = std::thread([this] { run(); });
}

namespace {
// What a rank adds to its count when its communicator is destroyed: the others stop watching it.
constexpr int64_t kLeft = int64_t{1} << 40;
}  // namespace

Heartbeat::~Heartbeat() {
  {
    // A rank done with the communicator is not silent: it says it left (a second at most, the store may be gone).
    TimeoutScope bounded(1.0);
    int64_t ignored = 0;
    (void)space_->add("beat/" + std::to_string(space_->rank()), kLeft, &ignored);
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void Heartbeat::run() {
  using Clock = std::chrono::steady_clock;
  const int n = space_->nranks(), me = space_->rank();
  log::RankScope scope(me);
  // Per rank: the last count seen and when it last moved. Everyone starts as just seen: a rank is only reported
  // after a whole timeout without a beat.
  std::vector<int64_t> seen(n, -1);
  std::vector<Clock::time_point> moved(n, Clock::now());
  const auto period = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(period_));
  CancelScope cancel(&stopping_);  // a store request ends within milliseconds of the destructor
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    lock.unlock();
    int64_t count = 0;
    Status st = space_->add("beat/" + std::to_string(me), 1, &count);
    const Clock::time_point now = Clock::now();
    for (int r = 0; r < n && st.isOk(); ++r) {
      if (r == me) continue;
      st = space_->add("beat/" + std::to_string(r), 0, &count);
      if (!st.isOk()) break;
      if (count >= kLeft) continue;  // it destroyed its communicator
      if (count != seen[r]) {
        seen[r] = count;
        moved[r] = now;
        continue;
      }
      const double silent = std::chrono::duration<double>(now - moved[r]).count();
      if (silent < timeout_) continue;
      char why[160];
      snprintf(why, sizeof(why),
               "rank %d sent no heartbeat for %.1f s (CHORUS_HEARTBEAT_TIMEOUT %g s): dead, stopped or cut off", r,
               silent, timeout_);
      CHORUS_WARN(kInit, "%s", why);
      onSilent_(remoteError(why));
      return;
    }
    if (!st.isOk() && stopping_) return;
    if (!st.isOk()) {
      // The store is gone (its process ended): the detector cannot tell anything any more; the calls' own
      // liveness checks and CHORUS_TIMEOUT still stand.
      CHORUS_WARN(kInit, "heartbeat stopped: the rendezvous store cannot be reached: %s", st.message().c_str());
      return;
    }
    lock.lock();
    wake_.wait_for(lock, period, [this] { return stopping_.load(); });
  }
}

}  // namespace chorus

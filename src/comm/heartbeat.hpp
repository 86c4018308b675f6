// A communicator's heartbeat failure detector: a thread that, every period, bumps this rank's counter in the
// rendezvous store and reads the others'; a rank whose counter has not moved for the timeout is reported dead,
// stopped or cut off (the case a closed socket or a vanished pid cannot show: SIGSTOP, a lost host, a partition).
// It reads the store, not the ranks' connections, so a rank whose calls are slow (oversubscribed cores) still beats:
// only a rank whose process does not run for the whole timeout is reported.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "bootstrap/bootstrap.hpp"
#include "chorus/status.hpp"

namespace chorus {

class Heartbeat {
 public:
  /// Starts beating in `space` (a key space of this communicator's own). `onSilent` is called once, from the
  /// heartbeat's thread, with the first silent rank's error; the thread then stops.
  Heartbeat(std::unique_ptr<bootstrap::Bootstrap> space, double periodSeconds, double timeoutSeconds,
            std::function<void(const Status&)> onSilent);
  /// Stops the thread (within a period).
  ~Heartbeat();

 private:
  void run();

  std::unique_ptr<bootstrap::Bootstrap> space_;
  double period_, timeout_;
  std::function<void(const Status&)> onSilent_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::atomic<bool> stopping_{false};  // also cancels a store request in flight
  std::thread thread_;
};

}  // namespace chorus

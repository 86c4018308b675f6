// Local ranks made with fork() learn their communicator id from the parent after they are forked, so that the
// forks copy a process with one thread: making the id starts its rendezvous root, a thread of the parent. (A fork
// beside a running root is safe too, bootstrap/root_threads.hpp, but a launcher need not rely on it.) The parent
// forks, makes the id, and hands it to the children over a socket pair.
#pragma once

#include <functional>

#include "chorus/status.hpp"
#include "chorus/unique_id.hpp"

namespace chorus::bootstrap {

class IdHandoff {
 public:
  IdHandoff() = default;
  ~IdHandoff();
  IdHandoff(const IdHandoff&) = delete;
  IdHandoff& operator=(const IdHandoff&) = delete;

  /// Before the forks.
  Status open();
  /// In a forked child: waits up to CHORUS_TIMEOUT for the id; fails at once when the parent gives up or dies.
  Status receive(UniqueId* id);
  /// In the parent, after every fork: makes the id with `make` and sends one copy to each of `children`, then
  /// closes; when `make` fails, the waiting children fail at once. Returns `make`'s or the sending's error.
  Status handOver(const std::function<Status(UniqueId*)>& make, int children);
  /// In the parent when it has no id to give: waiting children fail at once.
  void close();

 private:
  int parentEnd_ = -1;
  int childEnd_ = -1;
};

}  // namespace chorus::bootstrap

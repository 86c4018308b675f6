// engine::run: drives a call's executions (one, or a group's) until all are done: spinning first, then yielding or
// sleeping in poll() on the sockets, checking that the peers live, and ending with an error at the deadline.
#include <poll.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "core/deadline.hpp"
#include "core/log.hpp"
#include "engine/execution.hpp"

namespace chorus::engine {

namespace {

Status failure(const Execution* e, const Status& st) {
  Status out =
      st.withContext(e->description() + " on rank " + std::to_string(e->rank()) + ", waiting for " + e->pendingPeers());
  CHORUS_WARN(kEngine, "%s", out.message().c_str());
  return out;
}

// One progress round over every unfinished execution. *allDone tells whether all are done after it: a call that
// finishes in its first round (a small one usually does) returns without another.
Status round(std::span<Execution* const> executions, bool* allDone, bool* moved) {
  *allDone = true;
  for (Execution* e : executions) {
    if (e->done()) continue;
    Status st = e->advance(moved);
    // An execution that finished here has nothing left on its connections (done() includes its sends drained).
    if (st.isOk() && !e->done()) st = e->pollConnections(false, moved);
    if (!st.isOk()) return failure(e, st);
    *allDone = *allDone && e->done();
  }
  return Status::ok();
}

// The wait after the spin: yields the core (or sleeps in poll() on sockets) until something moves, checks that the
// peers live, and ends with an error when nothing moved for the timeout (each communicator's own, else CHORUS_TIMEOUT;
// the shortest of a group's). Returns at the first progress (the caller spins again: the next message is often close
// behind) with *done telling whether everything finished.
Status waitPastSpin(std::span<Execution* const> executions, bool* done) {
  double timeout = executions.empty() ? timeoutOr(0) : timeoutOr(executions[0]->timeoutSeconds());
  for (Execution* e : executions) timeout = std::min(timeout, timeoutOr(e->timeoutSeconds()));
  // A peer may be waiting on this rank's header: one that, like this rank, believes it only receives from the other.
  for (Execution* e : executions) {
    e->sendDeferredHeaders();
    e->notifyWait();
  }
  const auto idleSince = std::chrono::steady_clock::now();
  const Deadline deadline = Deadline::after(timeout);
  auto lastLiveness = idleSince;
  std::vector<pollfd> pollFds;
  for (uint64_t idle = 1;; ++idle) {
    bool moved = false;
    CHORUS_TRY(round(executions, done, &moved));
    if (*done || moved) return Status::ok();
    if ((idle & 63) != 0) {
      pollFds.clear();
      bool sockets = true;
      for (Execution* e : executions) sockets = sockets && (e->done() || e->addPollFds(&pollFds));
      if (sockets && !pollFds.empty()) {
        poll(pollFds.data(), pollFds.size(), 1);
      } else {
        sched_yield();
      }
      continue;
    }
    auto now = std::chrono::steady_clock::now();
    if (now - idleSince > std::chrono::milliseconds(50)) std::this_thread::sleep_for(std::chrono::microseconds(50));
    if (now - lastLiveness > std::chrono::milliseconds(100)) {
      lastLiveness = now;
      for (Execution* e : executions) {
        if (e->done()) continue;
        bool ignored = false;
        Status st = e->pollConnections(true, &ignored);
        if (!st.isOk()) return failure(e, st);
      }
    }
    if (deadline.expired()) {
      for (Execution* e : executions) {
        if (!e->done()) {
          return failure(
              e, timeoutError("timed out after " + formatSeconds(timeout) +
                              (e->timeoutSeconds() > 0 ? " s (the communicator's timeout)" : " s (CHORUS_TIMEOUT)")));
        }
      }
    }
  }
}

}  // namespace

Status run(std::span<Execution* const> executions) {
  int64_t spin = executions.empty() ? 0 : executions[0]->spinIterations();
  for (const Execution* e : executions) spin = std::min(spin, e->spinIterations());
  while (true) {
    // Spin first: this path reads no clock and makes no system call. The deadline counts from the end of a spin.
    for (int64_t idle = 0; idle < spin;) {
      bool allDone = false, moved = false;
      CHORUS_TRY(round(executions, &allDone, &moved));
      if (allDone) return Status::ok();
      idle = moved ? 0 : idle + 1;
    }
    bool done = false;
    CHORUS_TRY(waitPastSpin(executions, &done));
    if (done) return Status::ok();
  }
}

}  // namespace chorus::engine

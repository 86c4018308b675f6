// One-sided puts and signals on host memory (NCCL 2.29's ncclPutSignal, ncclSignal, ncclWaitSignal): a put writes
// into a window of the target rank without the target taking part, and a signal tells the target it may read.
//
// A communicator made with CommConfig::oneSidedContexts > 0 connects a second mesh at init (its own key space of the
// bootstrap, so its streams carry nothing but puts) and runs a progress thread over it: the thread writes queued
// puts into the streams, and writes arriving ones into this rank's windows before it counts their signals, so a rank
// that waits for a signal sees the data of every put that peer made before it (each stream is in order).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <tuple>
#include <vector>

#include "chorus/status.hpp"
#include "core/deadline.hpp"
#include "core/settings.hpp"
#include "transports/transport.hpp"

namespace chorus {

namespace bootstrap {
class Bootstrap;
}

/// What one wait asks for: `count` signals from `peer` at signal `index` of `context`.
struct SignalWait {
  int count = 0;
  int peer = 0;
  int index = 0;
  int context = 0;
};

class OneSided {
 public:
  /// Connects the second mesh of rank `rank` of `nranks` under `parent`'s key space (collective: every rank of the
  /// communicator calls it during its init) and starts the progress thread.
  static Status connect(bootstrap::Bootstrap& parent, int rank, int nranks, const Settings& settings, int contexts,
                        const std::atomic<double>* timeoutSeconds, const std::atomic<bool>* aborted,
                        std::unique_ptr<OneSided>* out);

  /// Takes the connections of the second mesh (by rank; this rank's own is unused: a put to itself is a copy) and
  /// the bootstrap they were made with; `aborted` is the communicator's abort flag, `timeoutSeconds` its timeout
  /// (0: CHORUS_TIMEOUT), which Communicator::setTimeout may change.
  OneSided(int rank, int nranks, int contexts, const std::atomic<double>* timeoutSeconds,
           std::vector<std::unique_ptr<transport::Connection>> connections,
           std::unique_ptr<bootstrap::Bootstrap> bootstrap, const std::atomic<bool>* aborted);
  ~OneSided();
  OneSided(const OneSided&) = delete;
  OneSided& operator=(const OneSided&) = delete;

  int contexts() const { return contexts_; }
  /// The bytes of its connections' FIFOs (ncclCommMemStats counts them with the communicator's).
  size_t bufferBytes() const;

  /// Window `id` (the same on every rank: windows are registered collectively, in the same order) is this rank's
  /// `bytes` at `base`; puts into it from now on land there.
  void addWindow(uint64_t id, void* base, size_t bytes);
  void removeWindow(uint64_t id);

  /// A put of `bytes` from `data` into `peer`'s window `window` at byte `offset`, then one signal at (`index`,
  /// `context`); bytes 0 and window kNoWindow: the signal alone. Returns once the bytes are the transport's (the
  /// caller may reuse `data`), with an error for a failed peer, an abort or the timeout.
  static constexpr uint64_t kNoWindow = ~uint64_t{0};
  Status put(int peer, uint64_t window, uint64_t offset, const void* data, size_t bytes, int index, int context);
  /// Waits until every wait's signals arrived, then consumes them; an error names the peer that failed or, at the
  /// timeout, the signals still missing.
  Status wait(std::span<const SignalWait> waits);

  /// Ends the waits and puts in progress with an error (the communicator was aborted).
  void abort();

 private:
  struct Header;
  struct Outgoing;
  struct Incoming;
  struct Peer;
  using SignalKey = std::tuple<int, int, int>;  // peer, context, index

  void progressLoop();
  bool drained();
  Status pumpSends(int peer, bool* moved);
  Status pumpReceives(int peer, bool* moved);
  Status startIncoming(int peer);
  void finishIncoming(int peer);
  /// Marks `peer` failed with `cause` (the first cause stays); `warn`: a WARN line, else INFO (a peer that ended).
  void fail(int peer, const Status& cause, bool warn = true);
  Status putToSelf(uint64_t window, uint64_t offset, const void* data, size_t bytes, int index, int context);
  Status peerError(int peer) const;  // under mutex_

  const int rank_;
  const int nranks_;
  const int contexts_;
  const std::atomic<double>* timeoutSeconds_;
  double timeoutSeconds() const { return timeoutOr(timeoutSeconds_->load()); }
  std::vector<std::unique_ptr<transport::Connection>> connections_;
  std::unique_ptr<bootstrap::Bootstrap> bootstrap_;
  const std::atomic<bool>* aborted_;

  mutable std::mutex mutex_;         // guards what follows, up to the thread's own state
  std::condition_variable changed_;  // a put finished, a signal arrived, a peer failed
  std::condition_variable work_;     // a put was queued (wakes the progress thread)
  std::map<uint64_t, std::span<std::byte>> windows_;
  uint64_t windowsAdded_ = 0;              // ids below were registered here (some since removed)
  std::map<SignalKey, uint64_t> arrived_;  // signals not yet consumed by a wait
  std::vector<std::unique_ptr<Peer>> peers_;
  bool stopping_ = false;  // the communicator goes: the thread sends what is queued, then ends

  std::thread thread_;
};

}  // namespace chorus

// Shard: one key range's parameters and optimizer state on a server (its own range, or the replica it keeps for
// the previous server), and the rules of the synchronisation modes. Every worker's thread of the server calls
// push() for that worker's chunks; the calls meet here under one lock.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "chorus/training/param_server/param_server.hpp"
#include "key_layout.hpp"

namespace chorus::training::param_server {

class Shard {
 public:
  /// Sends an applied update on to the backup and returns once it applied it (chain replication).
  using Forward = std::function<Status(int chunk, long clock, int worker, const float* update, size_t n)>;

  /// The shard of range `range`, its parameters taken from `initial` (the whole model's).
  Shard(const KeyLayout& layout, int range, const ParamServerConfig& config, const float* initial);

  /// Worker `worker`'s push of chunk `chunk` of its step `clock` (1, 2, ...), gradient `g` (already times 1/W).
  /// Applies it unless it was applied before (a push again after a failover), waits as the mode says, then copies
  /// the chunk's parameters into `out` and the slowest live worker's clock for that chunk into *slowest.
  Status push(int worker, int chunk, long clock, const float* g, float* out, long* slowest);
  /// An update the primary applied (worker -1: a bsp round's sum), applied here unless it already was.
  void applyForwarded(int chunk, long clock, int worker, const float* update);
  void workerDone(int worker);
  /// Every waiting and later push fails with `why`.
  void fail(const Status& why);
  void setForward(Forward forward) { forward_ = std::move(forward); }

  long applied() const { return applied_; }
  long duplicates() const { return duplicates_; }

 private:
  void update(int chunk, const float* g);
  void forwardLocked(int chunk, long clock, int worker, const float* update);
  long slowestLocked(int chunk) const;
  /// bsp: applies the round of `chunk` once every live worker pushed it.
  void completeRoundLocked(int chunk);
  Status waitLocked(std::unique_lock<std::mutex>& lock, const std::function<bool()>& ready, int chunk, long clock);

  const KeyLayout layout_;
  const int range_;
  const ParamServerConfig config_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<float> params_;
  std::vector<std::unique_ptr<Optimizer>> optimizers_;  // one per chunk: a chunk steps when it is updated
  std::vector<std::vector<long>> clocks_;               // [chunk][worker]: the last step applied
  std::vector<bool> done_;
  // bsp: the round in progress of each chunk: who pushed, and their gradients
  std::vector<std::vector<bool>> arrived_;
  std::vector<std::vector<float>> pending_;  // [chunk]: W gradients one after another
  std::vector<long> roundClock_;
  std::vector<float> sum_;
  Status failure_;
  Forward forward_;
  bool forwarding_ = true;
  std::atomic<long> applied_{0}, duplicates_{0};
};

}  // namespace chorus::training::param_server

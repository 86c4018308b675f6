#include "shard.hpp"

#include <algorithm>
#include <climits>
#include <string>

namespace chorus::training::param_server {

Shard::Shard(const KeyLayout& layout, int range, const ParamServerConfig& config, const float* initial)
    : layout_(layout), range_(range), config_(config) {
  params_.assign(initial + layout.rangeBegin(range), initial + layout.rangeEnd(range));
  const int chunks = layout.chunks(range);
  for (int c = 0; c < chunks; ++c) optimizers_.push_back(makeOptimizer(config.optimizer, layout.chunkSize(range, c)));
  clocks_.assign(chunks, std::vector<long>(layout.workers, 0));
  done_.assign(layout.workers, false);
  if (config.sync == Sync::kBsp) {
    arrived_.assign(chunks, std::vector<bool>(layout.workers, false));
    pending_.resize(chunks);
    roundClock_.assign(chunks, 0);
    for (int c = 0; c < chunks; ++c) pending_[c].resize(layout.chunkSize(range, c) * layout.workers);
  }
}

void Shard::update(int chunk, const float* g) {
  optimizers_[chunk]->beginStep();
  optimizers_[chunk]->update(params_.data() + layout_.chunkOffset(chunk), g, 0, layout_.chunkSize(range_, chunk));
  ++applied_;
}

void Shard::forwardLocked(int chunk, long clock, int worker, const float* update) {
  if (!forward_ || !forwarding_) return;
  // A backup that died leaves the range without a replica: a second failure would lose it.
  if (!forward_(chunk, clock, worker, update, layout_.chunkSize(range_, chunk)).isOk()) forwarding_ = false;
}

long Shard::slowestLocked(int chunk) const {
  long slowest = LONG_MAX;
  for (int w = 0; w < layout_.workers; ++w)
    if (!done_[w]) slowest = std::min(slowest, clocks_[chunk][w]);
  return slowest;
}

Status Shard::waitLocked(std::unique_lock<std::mutex>& lock, const std::function<bool()>& ready, int chunk,
                         long clock) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(config_.timeoutSeconds);
  while (!ready() && failure_.isOk()) {
    if (changed_.wait_until(lock, deadline) == std::cv_status::timeout && !ready() && failure_.isOk()) {
      std::string behind;
      for (int w = 0; w < layout_.workers; ++w)
        if (!done_[w] && clocks_[chunk][w] < clock - (config_.sync == Sync::kSsp ? config_.staleness : 0))
          behind += (behind.empty() ? "" : ", ") + std::to_string(w);
      return timeoutError("parameter server: waited " + std::to_string(config_.timeoutSeconds) + " s for step " +
                          std::to_string(clock) + " of chunk " + std::to_string(chunk) + " of range " +
                          std::to_string(range_) + "; workers behind: " + behind);
    }
  }
  return failure_;
}

void Shard::completeRoundLocked(int chunk) {
  bool any = false, all = true;
  for (int w = 0; w < layout_.workers; ++w) {
    any = any || arrived_[chunk][w];
    all = all && (done_[w] || arrived_[chunk][w]);
  }
  if (!any || !all) return;
  // The mean over the workers, folded in worker order: ((g0 + g1) + g2) + ...
  const size_t n = layout_.chunkSize(range_, chunk);
  const long clock = roundClock_[chunk];
  sum_.assign(n, 0.0f);
  bool first = true;
  for (int w = 0; w < layout_.workers; ++w) {
    if (!arrived_[chunk][w]) continue;
    const float* gw = pending_[chunk].data() + n * w;
    for (size_t i = 0; i < n; ++i) sum_[i] = first ? gw[i] : sum_[i] + gw[i];
    first = false;
    arrived_[chunk][w] = false;
    clocks_[chunk][w] = clock;
  }
  update(chunk, sum_.data());
  forwardLocked(chunk, clock, -1, sum_.data());
  changed_.notify_all();
}

Status Shard::push(int worker, int chunk, long clock, const float* g, float* out, long* slowest) {
  std::unique_lock<std::mutex> lock(mutex_);
  CHORUS_TRY(failure_);
  std::vector<long>& clocks = clocks_[chunk];
  const size_t n = layout_.chunkSize(range_, chunk);
  if (clock <= clocks[worker]) {
    ++duplicates_;
  } else if (config_.sync == Sync::kBsp) {
    std::copy_n(g, n, pending_[chunk].data() + n * worker);
    arrived_[chunk][worker] = true;
    roundClock_[chunk] = clock;
    completeRoundLocked(chunk);
    CHORUS_TRY(waitLocked(
        lock, [&] { return clocks[worker] >= clock; }, chunk, clock));
  } else {
    update(chunk, g);
    clocks[worker] = clock;
    forwardLocked(chunk, clock, worker, g);
    changed_.notify_all();
  }
  if (config_.sync == Sync::kSsp) {
    CHORUS_TRY(waitLocked(
        lock, [&] { return slowestLocked(chunk) >= clock - config_.staleness; }, chunk, clock));
  }
  std::copy_n(params_.data() + layout_.chunkOffset(chunk), n, out);
  *slowest = std::min(slowestLocked(chunk), clock);
  return Status::ok();
}

void Shard::applyForwarded(int chunk, long clock, int worker, const float* update) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<long>& clocks = clocks_[chunk];
  if (worker < 0) {  // a bsp round: every live worker's push of that step
    if (*std::max_element(clocks.begin(), clocks.end()) >= clock) {
      ++duplicates_;
      return;
    }
    for (int w = 0; w < layout_.workers; ++w) {
      if (done_[w]) continue;
      clocks[w] = clock;
      arrived_[chunk][w] = false;  // pushed again to this backup before the forward arrived
    }
  } else {
    if (clocks[worker] >= clock) {
      ++duplicates_;
      return;
    }
    clocks[worker] = clock;
  }
  this->update(chunk, update);
  changed_.notify_all();
}

void Shard::workerDone(int worker) {
  std::lock_guard<std::mutex> lock(mutex_);
  done_[worker] = true;
  changed_.notify_all();
  // bsp: a round that waited for this worker alone is complete now.
  for (int c = 0; c < static_cast<int>(arrived_.size()); ++c) completeRoundLocked(c);
}

void Shard::fail(const Status& why) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (failure_.isOk()) failure_ = why;
  changed_.notify_all();
}

}  // namespace chorus::training::param_server

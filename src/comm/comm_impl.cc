#include "comm/comm_impl.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <set>
#include <sstream>
#include <tuple>

#include "bootstrap/host_id.hpp"
#include "chorus/version.hpp"
#include "comm/agreement.hpp"
#include "core/deadline.hpp"
#include "core/log.hpp"
#include "gpu/runtime.hpp"
#include "observe/clock.hpp"
#include "observe/dump_on_signal.hpp"
#include "observe/settings.hpp"

namespace chorus {
namespace {

double microsecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

CommImpl::CommImpl(int rank, int nranks, const CommConfig& config)
    : rank_(rank),
      nranks_(nranks),
      blocking_(config.blocking),
      config_(config),
      timeoutSeconds_(config.timeoutSeconds),
      settings_(chorus::settings().withOverrides(config.settings, &settingsError_)),
      dispatcher_(rank, nranks, &metrics_, [this] { return makeExecution(); }),
      recorder_(static_cast<size_t>(settings_[observe::kTraceEntries])) {}

std::unique_ptr<engine::Execution> CommImpl::makeExecution() {
  engine::ExecutionSettings settings;
  settings.pieces = {machineLoad_.ranksShareCores()};
  settings.timeoutSeconds = &timeoutSeconds_;
  settings.onWait = [this] { publishStarted(); };
  settings.values = &settings_;
  return std::make_unique<engine::Execution>(
      rank_, [this](int peer) { return connection(peer); }, &aborted_, std::move(settings));
}

CommConfig CommImpl::childConfig() const {
  CommConfig config = config_;
  config.timeoutSeconds = timeoutSeconds();
  return config;
}

CommImpl::~CommImpl() {
  heartbeat_.reset();   // first: its thread may be aborting this communicator
  peerMemory_.reset();  // waits for this rank's calls on device memory, and for its peers' reads of its memory
  observe::forgetDumper(this);
  worker_.drain();
}

std::string CommImpl::commName() const {
  char name[24];
  snprintf(name, sizeof(name), "%016llx", static_cast<unsigned long long>(commHash_));
  return name;
}

Status CommImpl::init(std::unique_ptr<bootstrap::Bootstrap> bootstrap) {
  bootstrap_ = std::move(bootstrap);  // for the same rank and size this object was made with
  commHash_ = bootstrap_->commHash();
  log::RankScope scope(rank_);
  CancelScope cancel(&aborted_);  // abort() ends every wait of the setup
  CHORUS_INFO(kInit, "chorus %s (NCCL API %s): rank %d of %d, host %s, pid %d", version(), ncclApiVersion(), rank_,
              nranks_, bootstrap::hostId().c_str(), static_cast<int>(getpid()));
  Status st = bootstrap_->beginSetup();
  // This rank's own invalid setting is its cause, even when another rank's failure reached it first.
  if (std::string bad = settingsError(); !bad.empty()) st = invalidArgument(bad);
  if (st.isOk() && !settingsError_.empty()) st = invalidArgument("CommConfig.settings: " + settingsError_);
  if (st.isOk()) st = connectPeers();
  if (st.isOk()) st = bootstrap_->finishSetup();
  if (!st.isOk() && aborted_) st = remoteError("the communicator was aborted during its init");
  if (!st.isOk()) {
    CHORUS_WARN(kInit, "init of rank %d/%d failed: %s", rank_, nranks_, st.message().c_str());
    bootstrap_->failSetup(st.message());  // the other ranks' setup waits end now, with this cause
    return recordFailure(st);
  }
  initialized_.store(true, std::memory_order_release);
  if (gpu::available()) {
    if (Status loaded = gpu::loadKernels(); !loaded.isOk())
      CHORUS_WARN(kInit, "rank %d: %s; calls on device memory will fail", rank_, loaded.message().c_str());
  }
  observe::registerDumper(this, [this](const std::string& dir) { (void)dumpFlightRecord(dir, "SIGUSR1", nullptr); });
  const double period = config_.heartbeatSeconds > 0 ? config_.heartbeatSeconds : settings_[observe::kHeartbeatPeriod];
  if (period > 0) {
    const double configured =
        config_.heartbeatTimeoutSeconds > 0 ? config_.heartbeatTimeoutSeconds : settings_[observe::kHeartbeatTimeout];
    heartbeat_ = std::make_unique<Heartbeat>(bootstrap_->successor("heartbeat", nranks_, rank_), period,
                                             configured > 0 ? configured : 4 * period,
                                             [this](const Status& cause) { abortFor(cause); });
  }
  CHORUS_INFO(kInit, "rank %d/%d ready: %zu host(s), %d rank(s) on %d core(s) of this machine: %s", rank_, nranks_,
              system_.find(topology::NodeKind::kHost).size(), machineLoad_.ranks, machineLoad_.cores,
              machineLoad_.ranksShareCores() ? "ranks share cores (waiters yield early)" : "a core for every rank");
  return Status::ok();
}

void CommImpl::initAsync(std::function<Status()> init) {
  (void)worker_.submit([this, init = std::move(init)] {
    std::lock_guard<std::mutex> lock(executionMutex_);
    return init();
  });
}

Status CommImpl::recordFailure(Status st) {
  if (st.isOk()) return st;
  std::lock_guard<std::mutex> lock(failureMutex_);
  if (!failed_.load(std::memory_order_relaxed)) {
    failure_ = st;
    failed_.store(true, std::memory_order_release);
  }
  return st;
}

Status CommImpl::poisonedError() const {
  std::lock_guard<std::mutex> lock(failureMutex_);
  return Status(failure_.code(),
                "an earlier call failed and left the streams out of step, so this communicator "
                "takes no more calls (destroy or abort it): " +
                    failure_.message());
}

Status CommImpl::failCall(const Status& st) {
  Status out = st;
  if (aborted_ && failed_.load(std::memory_order_acquire)) {  // ended by an abort: name why it was aborted
    std::lock_guard<std::mutex> lock(failureMutex_);
    const bool plainAbort = failure_.message().rfind("the communicator was aborted", 0) == 0;
    if (!plainAbort && st.message().find(failure_.message()) == std::string::npos)
      out = Status(st.code(), st.message() + " (" + failure_.message() + ")");
  }
  // Before the connections close: a peer that sees them close and asks the store finds this cause there.
  if (bootstrap_ && !aborted_) {
    const std::string mine = "rank " + std::to_string(rank_) + " failed: " + st.message();
    std::string first;
    bootstrap_->reportFailure(mine, &first);
    if (!first.empty() && first != mine) out = Status(st.code(), st.message() + "; the first failure: " + first);
  }
  (void)recordFailure(out);
  // The peers may wait for bytes this rank will never send: closing the connections tells them at once.
  for (auto& c : connections_)
    if (c) c->close();
  std::vector<observe::PeerBytes> progress;  // of the call that failed, when one was running
  if (finishRecording(observe::OpState::kFailed) && dispatcher_.execution())
    for (const auto& p : dispatcher_.execution()->peerProgress())
      progress.push_back({p.peer, p.sent, p.toSend, p.received, p.toReceive, p.peerStarted});
  if (const std::string& dir = settings_[observe::kTraceDir]; !dir.empty())
    (void)dumpFlightRecord(dir, st.code() == ErrorCode::kTimeout ? "timeout" : "failure", nullptr, std::move(progress));
  return out;
}

Status CommImpl::asyncError() const {
  if (failed_.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock(failureMutex_);
    return failure_;
  }
  Status queued = worker_.firstError();
  if (!queued.isOk()) return queued;
  if (!blocking_ && !worker_.foregroundIdle()) return {ErrorCode::kInProgress, "queued work is still running"};
  return Status::ok();
}

bool CommImpl::sharesProcess() const {
  for (int r = 0; r < static_cast<int>(peers_.size()); ++r)
    if (r != rank_ && peers_[r].processToken == peers_[rank_].processToken) return true;
  return false;
}

std::string CommImpl::transportNames() const {
  std::set<std::string> names;
  for (int r = 0; r < static_cast<int>(connections_.size()); ++r)
    if (r != rank_ && connections_[r]) names.insert(connections_[r]->transportName());
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : "+") + n;
  return out;
}

void CommImpl::setDeterministic(bool on) {
  worker_.drain();
  std::lock_guard<std::mutex> lock(executionMutex_);
  dispatcher_.setDeterministic(on);
}

CommImpl::MemoryUse CommImpl::memoryUse() {
  worker_.drain();
  std::lock_guard<std::mutex> lock(executionMutex_);
  MemoryUse use;
  use.releasable = dispatcher_.releasableBytes();
  for (const auto& c : connections_)
    if (c) use.persistent += c->bufferBytes();
  if (oneSided_) use.persistent += oneSided_->bufferBytes();
  return use;
}

void CommImpl::releaseBuffers() {
  worker_.drain();
  std::lock_guard<std::mutex> lock(executionMutex_);
  dispatcher_.releaseBuffers();
}

Status CommImpl::prepare(std::span<const Operation> ops, engine::Execution** out) {
  if (recorder_.capacity() == 0) return bind(ops, out);  // recorder off (CHORUS_TRACE_ENTRIES=0): no clock reads
  const uint64_t started = observe::ticks();
  CHORUS_TRY(bind(ops, out));
  startRecording(ops, started);
  return Status::ok();
}

Status CommImpl::usable() const {
  if (aborted_) return remoteError("the communicator was aborted");
  if (failed_.load(std::memory_order_acquire)) return poisonedError();
  if (!initialized()) return invalidUsage("communicator is not initialized (did its init fail?)");
  return Status::ok();
}

Status CommImpl::bind(std::span<const Operation> ops, engine::Execution** out) {
  CHORUS_TRY(usable());
  // A single call's path stays apart from a group's: through the group's loops it took 50 instructions more a call.
  if (ops.size() == 1 && dispatcher_.repeats(ops.front())) {
    *out = dispatcher_.rebind(ops.front());
    calls_.front().entry.sequence = dispatcher_.sequence();  // the same operation as the last call's entry
    return Status::ok();
  }
  if (ops.size() > 1 && dispatcher_.repeats(ops)) {
    *out = dispatcher_.rebind(ops);
    for (RecordedCall& c : calls_) c.entry.sequence = dispatcher_.sequence();  // the same operations as last time
    return Status::ok();
  }
  calls_.clear();
  CHORUS_TRY(dispatcher_.bindAnew(ops, &choices_, out));
  for (size_t i = 0; i < ops.size(); ++i) noteCall(ops[i], choices_[i]);
  for (size_t i = 0; i < calls_.size(); ++i) {
    calls_[i].entry.groupIndex = static_cast<uint16_t>(std::min<size_t>(i, 0xffff));
    calls_[i].entry.groupSize = static_cast<uint16_t>(std::min<size_t>(calls_.size(), 0xffff));
  }
  return Status::ok();
}

void CommImpl::complete(std::span<const Operation> ops) {
  (void)finishRecording(observe::OpState::kCompleted);
  dispatcher_.complete(ops);
}

Status CommImpl::runOwned(std::span<const Operation> ops) {
  log::RankScope scope(rank_);
  engine::Execution* execution = nullptr;
  CHORUS_TRY(prepare(ops, &execution));
  // A transfer that failed half-way leaves the streams out of step with the peers: nothing after it may run.
  if (Status st = engine::run(std::span<engine::Execution* const>(&execution, 1)); !st.isOk()) return failCall(st);
  complete(ops);
  return Status::ok();
}

Status CommImpl::execute(const Operation& op) {
  // No lock here: a lock's atomic exchange fences every call, and the sender of a small message then waits for its
  // store to reach the receiver's core (a tenth of a small Broadcast). The execution is ours all the same: the
  // async worker is idle once drained, and a communicator is used by one thread at a time (as in NCCL).
  worker_.drain();
  if (dispatcher_.repeats(op) && !log::enabled(log::Level::kInfo, log::kColl)) return runRepeated(op);
  return runLogged({&op, 1});
}

// runOwned() of a call that repeats the bound single operation (a training step's, a benchmark's loop), with
// prepare(), bind() and complete() in the same frame and the flight recorder's loops over a group's calls left
// out: the layers of a general call took about a tenth of a small call's path, the recorder's a fifth.
Status CommImpl::runRepeated(const Operation& op) {
  log::RankScope scope(rank_);
  CHORUS_TRY(usable());
  const bool recording = recorder_.capacity() != 0;  // off (CHORUS_TRACE_ENTRIES=0): no clock reads
  const uint64_t started = recording ? observe::ticks() : 0;
  engine::Execution* execution = dispatcher_.rebind(op);
  calls_.front().entry.sequence = dispatcher_.sequence();
  if (recording) startRepeatedRecording(started);
  if (Status st = engine::run(std::span<engine::Execution* const>(&execution, 1)); !st.isOk()) return failCall(st);
  if (recording) finishRepeatedRecording();
  dispatcher_.complete({&op, 1});
  return Status::ok();
}

Status CommImpl::runLogged(std::span<const Operation> ops) {
  // The clock is read only when the COLL line will be printed.
  if (!log::enabled(log::Level::kInfo, log::kColl)) return runOwned(ops);
  const auto start = std::chrono::steady_clock::now();
  Status st = runOwned(ops);
  log::RankScope scope(rank_);
  logCalls(ops, microsecondsSince(start), st);
  return st;
}

Request CommImpl::submit(Operation op) {
  std::vector<Operation> ops;
  ops.push_back(std::move(op));
  return submit(std::move(ops));
}

Request CommImpl::submit(std::vector<Operation> ops) {
  const uint64_t now = observe::ticks();
  for (Operation& op : ops) op.scheduledTick = now;
  return worker_.submit([this, ops = std::move(ops)] {
    std::lock_guard<std::mutex> lock(executionMutex_);
    return runLogged(ops);
  });
}

Request CommImpl::submitOnStream(std::vector<Operation> ops, std::function<Status(std::vector<Operation>*)> ready) {
  return worker_.submit(
      [this, ops = std::move(ops), ready = std::move(ready)]() mutable {
        std::lock_guard<std::mutex> lock(executionMutex_);
        Status st = ready(&ops);
        // The peers run this call anyway: a rank that cannot must tell them at once rather than let them time out.
        if (!st.isOk()) return failCall(st.withContext(algo::collName(ops.front().type)));
        return runLogged(ops);
      },
      AsyncWorker::kBackground);
}

Status CommImpl::split(int color, int key, std::unique_ptr<CommImpl>* out) {
  worker_.drain();
  CancelScope cancel(&aborted_);  // abort() ends the exchange below within milliseconds
  TimeoutScope timeout(timeoutSeconds());
  const std::string tag = "split" + std::to_string(splits_++);
  std::vector<std::string> all;
  CHORUS_TRY(bootstrap_->allGather(tag, std::to_string(color) + " " + std::to_string(key), &all));
  std::vector<std::tuple<int, int>> members;  // (key, old rank) of my color
  for (int r = 0; r < nranks_; ++r) {
    int c = 0, k = 0;
    std::istringstream(all[r]) >> c >> k;
    if (c == color) members.emplace_back(k, r);
  }
  out->reset();
  if (color < 0) return Status::ok();
  std::sort(members.begin(), members.end());
  int newRank = 0;
  for (size_t i = 0; i < members.size(); ++i)
    if (std::get<1>(members[i]) == rank_) newRank = static_cast<int>(i);
  auto child = std::make_unique<CommImpl>(newRank, static_cast<int>(members.size()), childConfig());
  {
    // While the child's init waits, an abort of this communicator aborts the child too (see abort()).
    std::lock_guard<std::mutex> lock(splitMutex_);
    if (aborted_) return remoteError("the communicator was aborted during a split");
    splitChild_ = child.get();
  }
  Status st =
      child->init(bootstrap_->child(tag + "/" + std::to_string(color), static_cast<int>(members.size()), newRank));
  {
    std::lock_guard<std::mutex> lock(splitMutex_);
    splitChild_ = nullptr;
  }
  CHORUS_TRY(st);
  child->setDeterministic(dispatcher_.deterministic());  // a split inherits the mode, as every rank's parent has it
  *out = std::move(child);
  return Status::ok();
}

Status CommImpl::shrink(const std::vector<int>& excluded, std::unique_ptr<CommImpl>* out) {
  // After an abort nothing runs any more; otherwise queued work of this communicator finishes first.
  if (!aborted_) worker_.drain();
  TimeoutScope timeout(timeoutSeconds());
  // Every remaining rank knows the new numbering from the list alone, so no exchange over the (possibly broken)
  // communicator is needed: the list names the new communicator's rendezvous.
  std::string tag = "shrink" + std::to_string(shrinks_++);
  for (int r : excluded) tag += "-" + std::to_string(r);
  const int newSize = nranks_ - static_cast<int>(excluded.size());
  const int newRank =
      rank_ - static_cast<int>(std::lower_bound(excluded.begin(), excluded.end(), rank_) - excluded.begin());
  auto child = std::make_unique<CommImpl>(newRank, newSize, childConfig());
  CHORUS_TRY(child->init(bootstrap_->successor(tag, newSize, newRank)));
  child->setDeterministic(dispatcher_.deterministic());
  *out = std::move(child);
  return Status::ok();
}

Status CommImpl::agree(uint32_t* value, std::vector<int>* members, double graceSeconds) {
  if (!bootstrap_) return invalidUsage("agree: the communicator was never set up");
  if (!aborted_) worker_.drain();
  log::RankScope scope(rank_);
  auto space = bootstrap_->successor("agree" + std::to_string(agreements_++), nranks_, rank_);
  return chorus::agree(*space, value, members, graceSeconds, timeoutSeconds());
}

void CommImpl::abortFor(const Status& cause) {
  if (aborted_) return;
  if (bootstrap_) {
    std::string first;
    bootstrap_->reportFailure("rank " + std::to_string(rank_) + " saw: " + cause.message(), &first);
  }
  (void)recordFailure(cause);
  abort();
}

void CommImpl::abort() {
  if (aborted_.exchange(true)) return;
  if (oneSided_) oneSided_->abort();  // its waits and puts end now, not at their timeout
  {
    // A split in progress: its child's init stops waiting too (its own flag ends its waits).
    std::lock_guard<std::mutex> lock(splitMutex_);
    if (splitChild_) splitChild_->aborted_ = true;
  }
  (void)recordFailure(remoteError("the communicator was aborted (ncclCommAbort / Communicator::abort)"));
  // The engine and every init wait look at aborted_ at least every few milliseconds: the calling thread leaves
  // its call, queued work fails at once.
  if (!gate_.closeAndWait(timeoutOr(timeoutSeconds()))) {
    CHORUS_WARN(kInit, "abort: a call of rank %d did not leave the communicator", rank_);
    return;
  }
  worker_.drain();
  std::lock_guard<std::mutex> lock(executionMutex_);
  // Closing tells the peers at once; their waits end with an error naming this rank.
  for (auto& c : connections_)
    if (c) c->close();
  if (const std::string& dir = settings_[observe::kTraceDir]; !dir.empty() && initialized())
    (void)dumpFlightRecord(dir, "abort", nullptr);
}

}  // namespace chorus

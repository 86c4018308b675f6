#include "comm/comm_impl.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "bootstrap/host_id.hpp"
#include "chorus/version.hpp"
#include "comm/agreement.hpp"
#include "core/deadline.hpp"
#include "core/log.hpp"
#include "core/settings.hpp"
#include "gpu/runtime.hpp"
#include "kernels/reduce.hpp"
#include "observe/clock.hpp"
#include "observe/dump_on_signal.hpp"
#include "topology/graph_xml.hpp"
#include "topology/local_host.hpp"
#include "topology/system.hpp"
#include "transports/peer_mesh.hpp"
#include "tuner/algo_override.hpp"
#include "tuner/choice.hpp"
#include "tuner/costs.hpp"

namespace chorus {
namespace {

double microsecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

using transport::Connection;

namespace {

// CHORUS_TUNING_FILE over `costs`, when set.
Status loadTuningFile(tuner::CostTable* costs) {
  const std::string& path = settings().tuningFile;
  if (path.empty()) return Status::ok();
  std::ifstream in(path);
  if (!in) return invalidArgument("CHORUS_TUNING_FILE " + path + " cannot be opened");
  std::ostringstream text;
  text << in.rdbuf();
  Status st = tuner::parseTuning(text.str(), costs);
  return st.isOk() ? st : st.withContext("CHORUS_TUNING_FILE " + path);
}

}  // namespace

CommImpl::CommImpl(int rank, int nranks, const CommConfig& config)
    : rank_(rank),
      nranks_(nranks),
      blocking_(config.blocking),
      config_(config),
      recorder_(static_cast<size_t>(settings().traceEntries)) {}

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
  const double period = config_.heartbeatSeconds > 0 ? config_.heartbeatSeconds : settings().heartbeatPeriod;
  if (period > 0) {
    const double configured =
        config_.heartbeatTimeoutSeconds > 0 ? config_.heartbeatTimeoutSeconds : settings().heartbeatTimeout;
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
  if (finishRecording(observe::OpState::kFailed) && execution_)
    for (const auto& p : execution_->peerProgress())
      progress.push_back({p.peer, p.sent, p.toSend, p.received, p.toReceive, p.peerStarted});
  if (const std::string& dir = settings().traceDir; !dir.empty())
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

Status CommImpl::connectPeers() {
  const Settings& cfg = settings();
  transport::PeerMesh mesh;
  CHORUS_TRY(transport::connectPeerMesh(*bootstrap_, rank_, nranks_, cfg, &mesh));
  peers_ = std::move(mesh.peers);
  connections_ = std::move(mesh.connections);

  CHORUS_TRY(buildSystem());
  waitSpins_ = {cfg.spinIterations, machineLoad_.ranksShareCores()};
  return bootstrap_->barrier("ready");
}

Status CommImpl::buildSystem() {
  // Hosts in the order of their first rank; that rank sends its host's graph, the others send nothing.
  std::map<std::string, int> hostIndex;
  hostOfRank_.assign(nranks_, 0);
  for (int r = 0; r < nranks_; ++r) {
    hostOfRank_[r] = hostIndex.emplace(peers_[r].hostId, static_cast<int>(hostIndex.size())).first->second;
  }
  const bool sender =
      std::find(hostOfRank_.begin(), hostOfRank_.end(), hostOfRank_[rank_]) - hostOfRank_.begin() == rank_;
  std::string mine;
  if (sender) {
    const topology::SystemGraph* local = nullptr;
    CHORUS_TRY(topology::localHost(&local));
    mine = topology::exportGraphXml(*local);
  }
  std::vector<std::string> blobs;
  CHORUS_TRY(bootstrap_->allGather("topology", mine, &blobs));
  std::vector<topology::SystemGraph> hosts(hostIndex.size());
  for (int r = 0; r < nranks_; ++r) {
    if (blobs[r].empty()) continue;
    Status st = topology::importGraphXml(blobs[r], &hosts[hostOfRank_[r]]);
    if (!st.isOk()) return st.withContext("topology of rank " + std::to_string(r) + "'s host");
  }
  system_ = topology::joinHosts(hosts);
  hostLayout_ = std::make_shared<const std::vector<int>>(hostOfRank_);
  // The selector needs the same inputs on every rank: rank 0's cost table (its tuning file over the defaults for
  // this system) goes to all; a host with more ranks than cores makes every dependent round dearer.
  std::string table;
  if (rank_ == 0) {
    tuner::CostTable costs = tuner::defaultCosts(system_);
    Status st = loadTuningFile(&costs);
    table = st.isOk() ? tuner::formatTuning(costs) : "error " + st.message();
  }
  CHORUS_TRY(bootstrap_->allGather("tuning", table, &blobs));
  if (blobs[0].rfind("error ", 0) == 0) return invalidArgument(blobs[0].substr(6) + " (on rank 0)");
  tuner::CostTable costs = tuner::defaultCosts(system_);
  CHORUS_TRY(tuner::parseTuning(blobs[0], &costs));
  // Cores belong to machines, and to the ranks on them only as far as their CPU sets reach (machineLoad); hosts
  // simulated on one machine (CHORUS_HOST_ID) share its cores.
  machineLoad_ = transport::machineLoad(peers_, rank_);
  residency_ = engine::CacheResidency(engine::lastLevelCacheShare(machineLoad_.ranks));
  coldStreamingFrom_ = static_cast<size_t>(settings().coldStreaming);
  cachedStreamingFrom_ = static_cast<size_t>(settings().cachedStreaming);
  selector_.costs = tuner::costInputs(costs, transport::anyMachineSharesCores(peers_));
  selector_.measured = tuner::measuredRules(costs, nranks_, static_cast<int>(hosts.size()));
  selector_.deterministic = settings().deterministic;
  if (config_.algorithm.empty()) return tuner::rulesFromSettings(&selector_.rules);
  Status st = tuner::parseAlgoRules(config_.algorithm, &selector_.rules);
  return st.isOk() ? st : st.withContext("CommConfig.algorithm '" + config_.algorithm + "'");
}

std::byte* CommImpl::scratch(size_t bytes) {
  if (scratch_.size() < bytes) {
    scratch_.clear();
    scratch_.shrink_to_fit();
    scratch_.resize(bytes);
  }
  return scratch_.data();
}

const CommImpl::CachedPlan* CommImpl::plan(const algo::CollShape& shape) {
  auto key = std::make_tuple(static_cast<int>(shape.type), shape.count, shape.elemSize, shape.root);
  auto it = plans_.find(key);
  if (it != plans_.end()) return &it->second;
  const algo::Algorithm* a = tuner::choose(shape, selector_);
  if (!a) return nullptr;
  CachedPlan cached{a->generate(shape)};
  cached.wireBytes = algo::wireBytes(cached.plan, rank_);
  cached.algorithm = a->name;
  cached.predictedMicros = static_cast<float>(tuner::predict(*a, shape, selector_.costs));
  cached.metrics = metrics_.cell(static_cast<uint8_t>(shape.type), a->name);
  return &plans_.emplace(key, std::move(cached)).first->second;
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
  if (selector_.deterministic == on) return;
  selector_.deterministic = on;
  plans_.clear();  // chosen under the other mode
  bound_.clear();
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
  // A single call's path stays apart from a group's: through bindAgain()'s loops it took 50 instructions more a call.
  if (ops.size() == 1 && repeatsBound(ops.front())) {
    rebind(ops.front());
    *out = execution_.get();
    return Status::ok();
  }
  if (ops.size() > 1 && sameCalls(ops)) return bindAgain(ops, out);
  return bindAnew(ops, out);
}

namespace {

// A call on buffers other than the last call's (a training step's fresh activations, a pool) finds them out of the
// cache: their lines, asked for here, arrive while the call is rewound and its peers' messages awaited, instead of
// one miss after another inside its steps. Only small buffers: a larger copy streams through the hardware prefetcher,
// and asking for every line of a few KiB made such calls slower
// (perf/archive/2026-12-01-calls-on-other-buffers-only-the-buffers-checked-again-their.md).
constexpr size_t kPrefetchedBufferBytes = 1024;

// The lines of `bytes` from `at`, an unaligned start's first line included; kWrite as __builtin_prefetch's rw.
template <int kWrite>
void prefetchLines(const void* at, size_t bytes) {
  constexpr uintptr_t kLine = 64;
  const uintptr_t end = reinterpret_cast<uintptr_t>(at) + bytes;
  for (uintptr_t line = reinterpret_cast<uintptr_t>(at) & ~(kLine - 1); line < end; line += kLine)
    __builtin_prefetch(reinterpret_cast<const void*>(line), kWrite);
}

void prefetchSmall(const void* send, const void* recv, const BufferExtents& extents) {
  if (extents.sendBytes <= kPrefetchedBufferBytes) prefetchLines<0>(send, extents.sendBytes);
  if (extents.recvBytes <= kPrefetchedBufferBytes) prefetchLines<1>(recv, extents.recvBytes);
}

}  // namespace

// Bound operation `i`'s steps pointed at `op`'s buffers where they are others than its last call's.
inline void CommImpl::pointAt(size_t i, const Operation& op) {
  BoundOperation& bound = bound_[i];
  if (op.send == bound.send && op.recv == bound.recv) return;
  prefetchSmall(op.send, op.recv, bound.extents);
  execution_->retarget(i, op.send, op.recv);
  bound.send = op.send;
  bound.recv = op.recv;
}

// The same call as last time: its bound steps still hold, once pointed at this call's buffers.
void CommImpl::rebind(const Operation& op) {
  BoundOperation& bound = bound_.front();
  pointAt(0, op);
  observe::MetricsTable::addCall(bound.metrics, bound.payload, bound.wire);
  lastAlgorithm_ = bound.algorithm;
  execution_->setStreamingFrom(0, streamingFrom(op.send, op.recv, bound.extents));
  execution_->rewind(++sequence_);
  calls_.front().entry.sequence = sequence_;  // the same operation as the last call's entry
}

bool CommImpl::sameCalls(std::span<const Operation> ops) const {
  if (bound_.size() != ops.size()) return false;
  for (size_t i = 0; i < ops.size(); ++i)
    if (!bound_[i].sameCall(ops[i])) return false;
  return true;
}

// A group repeated, on the same buffers or others (a framework's coalesced calls each step, a pipeline's batched
// Send/Recv each micro-batch): its plans, scratch and steps stand. Binding a group anew took about a third of a 4-call
// group's instructions (1-rank AllReduce of 8 B, `-m 4`).
Status CommImpl::bindAgain(std::span<const Operation> ops, engine::Execution** out) {
  for (size_t i = 0; i < ops.size(); ++i) {
    const Operation& op = ops[i];
    BoundOperation& bound = bound_[i];
    pointAt(i, op);
    observe::MetricsTable::addCall(bound.metrics, bound.payload, bound.wire);
    execution_->setStreamingFrom(i, streamingFrom(op.send, op.recv, bound.extents));
  }
  execution_->rewind(++sequence_);
  for (RecordedCall& c : calls_) c.entry.sequence = sequence_;  // the same operations as the last call's entries
  *out = execution_.get();
  return Status::ok();
}

// Out of line, so that the repeated call's path above stays short.
[[gnu::noinline]] Status CommImpl::bindAnew(std::span<const Operation> ops, engine::Execution** out) {
  if (!execution_) {
    execution_ = std::make_unique<engine::Execution>(
        rank_, [this](int peer) { return connection(peer); }, &aborted_);
    execution_->setOnWait([this] { publishStarted(); });
    execution_->setTimeoutSeconds(config_.timeoutSeconds);
    execution_->setPieces({machineLoad_.ranksShareCores()});
  }
  bound_.clear();
  CHORUS_TRY(checkSelfExchanges(ops, rank_));
  execution_->reset(algo::collName(ops.front().type), ++sequence_, ops.size());
  calls_.clear();

  // Plans first, to size one scratch area for the whole call.
  // AlltoAllv plans depend on the counts and are not cached; reserved up front so pointers to them stay valid.
  std::vector<algo::Plan> uncached;
  const auto variable =
      std::count_if(ops.begin(), ops.end(), [](const Operation& op) { return op.type == algo::CollType::kAlltoAllv; });
  if (variable > 0) uncached.reserve(static_cast<size_t>(variable));
  std::vector<const algo::Plan*>& plans = planOfOp_;
  // The cache is bounded, so that a sweep over many sizes cannot grow it without end, and emptied before a call
  // binds, never while it does: the plans of a group's first operations must outlive the lookups of its later ones.
  if (plans_.size() + ops.size() > kMaxCachedPlans) plans_.clear();
  algorithmOfOp_.clear();
  std::vector<size_t>& offsets = scratchOffsets_;  // per op: scratch of its plan, then its pre-multiplied input
  plans.clear();
  offsets.clear();
  size_t scratchTotal = 0;
  uint64_t callPayload = 0;  // the operations' payloads summed: the call's size for its wait's spin
  for (const Operation& op : ops) {
    algo::CollShape shape{op.type, nranks_, rank_, op.count, dataTypeSize(op.dtype), op.root, op.variable, hostLayout_};
    // The algorithm is chosen once per shape (cached with its plan), not on every call.
    const algo::Plan* chosen = nullptr;
    uint64_t wire = 0;
    float predicted = 0;
    observe::MetricsTable::Cell* cell = nullptr;
    if (op.type == algo::CollType::kAlltoAllv) {
      if (const algo::Algorithm* a = tuner::choose(shape, selector_)) {
        chosen = &uncached.emplace_back(a->generate(shape));
        wire = algo::wireBytes(*chosen, rank_);
        lastAlgorithm_ = a->name;
        predicted = static_cast<float>(tuner::predict(*a, shape, selector_.costs));
        cell = metrics_.cell(static_cast<uint8_t>(op.type), a->name);
      }
    } else if (const CachedPlan* cached = plan(shape)) {
      chosen = &cached->plan;
      wire = cached->wireBytes;
      lastAlgorithm_ = cached->algorithm;
      predicted = cached->predictedMicros;
      cell = cached->metrics;
    }
    if (!chosen) return internalError(std::string("no algorithm for ") + algo::collName(op.type));
    algorithmOfOp_.push_back(lastAlgorithm_);
    const uint64_t payload = payloadBytes(op, nranks_);
    callPayload += payload;
    noteCall(op, lastAlgorithm_, predicted, payload, wire, cell);
    plans.push_back(chosen);
    offsets.push_back(scratchTotal);
    scratchTotal += (plans.back()->scratchBytes + 63) & ~size_t{63};
    // PreMulSum scales this rank's input into scratch before the reduction starts.
    size_t premul = op.op.kind == RedOpKind::kPreMulSum ? reductionInputCount(op, rank_, nranks_) : 0;
    offsets.push_back(scratchTotal);
    scratchTotal += (premul * dataTypeSize(op.dtype) + 63) & ~size_t{63};
  }
  execution_->setSpinIterations(waitSpins_.forCall(callPayload));
  for (size_t i = 0; i < calls_.size(); ++i) {
    calls_[i].entry.groupIndex = static_cast<uint16_t>(std::min<size_t>(i, 0xffff));
    calls_[i].entry.groupSize = static_cast<uint16_t>(std::min<size_t>(calls_.size(), 0xffff));
  }
  std::byte* base = scratch(scratchTotal);
  for (size_t i = 0; i < ops.size(); ++i) {
    const Operation& op = ops[i];
    engine::Binding b{op.send, op.recv, base + offsets[2 * i], kernels::reduceFunction(op.dtype, op.op.kind),
                      dataTypeSize(op.dtype)};
    // Each operation's receive buffer judged on its own: a group's (DDP's buckets, batched Send/Recv) as a call's.
    b.streamingFrom = streamingFrom(op.send, op.recv, bufferExtents(op, rank_, nranks_));
    b.pointToPoint = op.type == algo::CollType::kSend || op.type == algo::CollType::kRecv;
    size_t premul = op.op.kind == RedOpKind::kPreMulSum ? reductionInputCount(op, rank_, nranks_) : 0;
    if (premul > 0) {
      kernels::scale(base + offsets[2 * i + 1], op.send, premul, op.dtype, op.op.scalar);
      b.send = base + offsets[2 * i + 1];
    }
    execution_->append(*plans[i], b);
  }
  execution_->sign(signatureOf(ops));
  // Remember the call for a rewind, unless a binding depends on more than its arguments (AlltoAllv's counts,
  // PreMulSum's scaled copy of the input).
  const bool rebindable = std::none_of(ops.begin(), ops.end(), [](const Operation& op) {
    return op.type == algo::CollType::kAlltoAllv || op.op.kind == RedOpKind::kPreMulSum;
  });
  for (size_t i = 0; rebindable && i < ops.size(); ++i) {
    const Operation& op = ops[i];
    const observe::FlightEntry& e = calls_[i].entry;
    bound_.push_back({op.type, op.send, op.recv, op.count, op.dtype, op.op.kind, op.root, e.payloadBytes, e.wireBytes,
                      bufferExtents(op, rank_, nranks_), e.algorithm, calls_[i].metrics});
  }
  *out = execution_.get();
  return Status::ok();
}

// Steps into a receive buffer out of the cache stream from CHORUS_COLD_STREAMING (64 KiB): a plain store would
// first read each line from memory. Measured cold against 2 MiB and 256 KiB thresholds at 4 and 8 ranks
// (perf/archive/2026-11-28-streaming-stores-into-receive-buffers-out-of-the-cache-judge.md); those pools held zeros,
// which streaming stores write faster than data, and with data the gain shrank to a few collectives and sizes
// (perf/archive/2026-11-29-buffers-full-of-zeros-streaming-stores-measured-too-fast.md).
size_t CommImpl::streamingFrom(const void* send, const void* recv, const BufferExtents& extents) {
  // Smaller calls are not noted: their few bytes evict little.
  if (coldStreamingFrom_ == 0 || extents.recvBytes < coldStreamingFrom_) return cachedStreamingFrom_;
  // An in-place call's send buffer holds its receive buffer (or is held by it).
  const auto* sendAt = static_cast<const std::byte*>(send);
  const auto* recvAt = static_cast<const std::byte*>(recv);
  const bool overlap = sendAt < recvAt + extents.recvBytes && recvAt < sendAt + extents.sendBytes;
  const size_t footprint =
      overlap ? std::max(extents.recvBytes, extents.sendBytes) : extents.recvBytes + extents.sendBytes;
  const bool cached = residency_.touch(recv, footprint);
  return cached ? cachedStreamingFrom_ : coldStreamingFrom_;
}

engine::CallSignature CommImpl::signatureOf(std::span<const Operation> ops) const {
  engine::CallSignature sig;
  const Operation& first = ops.front();
  sig.count = first.count;
  sig.root = first.root;
  sig.type = static_cast<uint8_t>(first.type);
  sig.dtype = static_cast<uint8_t>(first.dtype);
  sig.op = static_cast<uint8_t>(first.op.kind);
  sig.operations = static_cast<uint8_t>(std::min<size_t>(ops.size(), 255));
  const auto collectives = std::count_if(ops.begin(), ops.end(), [](const Operation& op) {
    return op.type != algo::CollType::kSend && op.type != algo::CollType::kRecv;
  });
  sig.collectives = static_cast<uint8_t>(std::min<ptrdiff_t>(collectives, 255));
  sig.sequence = static_cast<uint32_t>(sequence_);
  // Point-to-point operations differ between the two sides by nature (Send here, Recv there, peers of their own):
  // the byte flows of the streams check them. Every collective of the call must be the same on every rank.
  for (size_t i = 0; i < ops.size(); ++i) {
    const Operation& op = ops[i];
    if (op.type == algo::CollType::kSend || op.type == algo::CollType::kRecv) continue;
    const bool variable = op.type == algo::CollType::kAlltoAllv;  // counts differ per rank by design
    sig.digest =
        engine::mixCall(sig.digest, static_cast<int>(op.type), variable ? 0 : op.count, static_cast<int>(op.dtype),
                        static_cast<int>(op.op.kind), op.root, i < algorithmOfOp_.size() ? algorithmOfOp_[i] : "");
  }
  return sig;
}

void CommImpl::complete(std::span<const Operation> ops) {
  (void)finishRecording(observe::OpState::kCompleted);
  divideAverages(ops);
}

void CommImpl::divideAverages(std::span<const Operation> ops) {
  for (const Operation& op : ops) {
    if (op.op.kind != RedOpKind::kAvg) continue;
    size_t n = reductionOutputCount(op, rank_, nranks_);
    if (n > 0) kernels::divide(op.recv, n, op.dtype, nranks_);
  }
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
  if (repeatsBound(op) && !log::enabled(log::Level::kInfo, log::kColl)) return runRepeated(op);
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
  rebind(op);
  if (recording) startRepeatedRecording(started);
  engine::Execution* execution = execution_.get();
  if (Status st = engine::run(std::span<engine::Execution* const>(&execution, 1)); !st.isOk()) return failCall(st);
  if (recording) finishRepeatedRecording();
  divideAverages({&op, 1});
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
  TimeoutScope timeout(config_.timeoutSeconds);
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
  auto child = std::make_unique<CommImpl>(newRank, static_cast<int>(members.size()), config_);
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
  child->setDeterministic(selector_.deterministic);  // a split inherits the mode, as every rank's parent has it
  *out = std::move(child);
  return Status::ok();
}

Status CommImpl::shrink(const std::vector<int>& excluded, std::unique_ptr<CommImpl>* out) {
  // After an abort nothing runs any more; otherwise queued work of this communicator finishes first.
  if (!aborted_) worker_.drain();
  TimeoutScope timeout(config_.timeoutSeconds);
  // Every remaining rank knows the new numbering from the list alone, so no exchange over the (possibly broken)
  // communicator is needed: the list names the new communicator's rendezvous.
  std::string tag = "shrink" + std::to_string(shrinks_++);
  for (int r : excluded) tag += "-" + std::to_string(r);
  const int newSize = nranks_ - static_cast<int>(excluded.size());
  const int newRank =
      rank_ - static_cast<int>(std::lower_bound(excluded.begin(), excluded.end(), rank_) - excluded.begin());
  auto child = std::make_unique<CommImpl>(newRank, newSize, config_);
  CHORUS_TRY(child->init(bootstrap_->successor(tag, newSize, newRank)));
  child->setDeterministic(selector_.deterministic);
  *out = std::move(child);
  return Status::ok();
}

Status CommImpl::agree(uint32_t* value, std::vector<int>* members, double graceSeconds) {
  if (!bootstrap_) return invalidUsage("agree: the communicator was never set up");
  if (!aborted_) worker_.drain();
  log::RankScope scope(rank_);
  auto space = bootstrap_->successor("agree" + std::to_string(agreements_++), nranks_, rank_);
  return chorus::agree(*space, value, members, graceSeconds, config_.timeoutSeconds);
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
  {
    // A split in progress: its child's init stops waiting too (its own flag ends its waits).
    std::lock_guard<std::mutex> lock(splitMutex_);
    if (splitChild_) splitChild_->aborted_ = true;
  }
  (void)recordFailure(remoteError("the communicator was aborted (ncclCommAbort / Communicator::abort)"));
  // The engine and every init wait look at aborted_ at least every few milliseconds: the calling thread leaves
  // its call, queued work fails at once.
  if (!gate_.closeAndWait(timeoutOr(config_.timeoutSeconds))) {
    CHORUS_WARN(kInit, "abort: a call of rank %d did not leave the communicator", rank_);
    return;
  }
  worker_.drain();
  std::lock_guard<std::mutex> lock(executionMutex_);
  // Closing tells the peers at once; their waits end with an error naming this rank.
  for (auto& c : connections_)
    if (c) c->close();
  if (const std::string& dir = settings().traceDir; !dir.empty() && initialized())
    (void)dumpFlightRecord(dir, "abort", nullptr);
}

}  // namespace chorus

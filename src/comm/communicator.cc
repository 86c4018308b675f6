#include "chorus/communicator.hpp"

#include <algorithm>
#include <cmath>

#include "bootstrap/launcher.hpp"
#include "comm/comm_impl.hpp"
#include "comm/group.hpp"
#include "core/deadline.hpp"
#include "core/log.hpp"
#include "gpu/placement.hpp"
#include "gpu/runtime.hpp"
#include "gpu/stream_calls.hpp"
#include "tuner/call_selection.hpp"

namespace chorus {

using algo::CollType;

namespace {

Operation makeOp(CollType type, const void* send, void* recv, size_t count, DataType dtype, RedOp op = {},
                 int root = 0) {
  Operation o;
  o.type = type;
  o.send = send;
  o.recv = recv;
  o.count = count;
  o.dtype = dtype;
  o.op = op;
  o.root = root;
  return o;
}

}  // namespace

Communicator::Communicator(std::shared_ptr<CommImpl> impl) : impl_(std::move(impl)) {}
Communicator::~Communicator() = default;

Status Communicator::create(const UniqueId& id, int nranks, int rank, std::unique_ptr<Communicator>* out) {
  return create(id, nranks, rank, out, CommConfig{});
}

Status Communicator::create(const UniqueId& id, int nranks, int rank, std::unique_ptr<Communicator>* out,
                            const CommConfig& config) {
  return createJoining(
      [id, nranks, rank](std::unique_ptr<bootstrap::Bootstrap>* bs) {
        return bootstrap::Bootstrap::join(id, nranks, rank, bs);
      },
      nranks, rank, out, config);
}

Status Communicator::create(std::shared_ptr<Store> store, const std::string& prefix, int nranks, int rank,
                            std::unique_ptr<Communicator>* out, const CommConfig& config) {
  if (!store) return invalidArgument("create: null store");
  return createJoining(
      [store, prefix, nranks, rank](std::unique_ptr<bootstrap::Bootstrap>* bs) {
        return bootstrap::Bootstrap::join(store, prefix, nranks, rank, bs);
      },
      nranks, rank, out, config);
}

Status Communicator::createJoining(std::function<Status(std::unique_ptr<bootstrap::Bootstrap>*)> join, int nranks,
                                   int rank, std::unique_ptr<Communicator>* out, const CommConfig& config) {
  if (!out) return invalidArgument("create: null output");
  if (nranks < 1 || nranks > kMaxRanks) {
    return invalidArgument("create: nranks " + std::to_string(nranks) + " outside [1, " + std::to_string(kMaxRanks) +
                           "]");
  }
  if (rank < 0 || rank >= nranks) {
    return invalidArgument("create: rank " + std::to_string(rank) + " outside [0, " + std::to_string(nranks) + ")");
  }
  if (!(config.timeoutSeconds >= 0)) {
    return invalidArgument("create: timeoutSeconds " + std::to_string(config.timeoutSeconds) + " is negative");
  }
  if (!(config.heartbeatSeconds >= 0) || !(config.heartbeatTimeoutSeconds >= 0)) {
    return invalidArgument("create: heartbeatSeconds and heartbeatTimeoutSeconds must not be negative");
  }
  auto comm = std::unique_ptr<Communicator>(new Communicator(std::make_shared<CommImpl>(rank, nranks, config)));
  CommImpl* impl = comm->impl_.get();
  auto init = [impl, join = std::move(join)]() -> Status {
    TimeoutScope timeout(impl->config().timeoutSeconds);  // the rendezvous waits as long as the setup
    std::unique_ptr<bootstrap::Bootstrap> bs;
    Status st = join(&bs);
    if (!st.isOk()) return impl->recordFailure(st);
    return impl->init(std::move(bs));
  };
  *out = std::move(comm);
  if (group::active()) {
    group::deferInit(init);
    return Status::ok();
  }
  if (!config.blocking) {
    impl->initAsync(std::move(init));
    return {ErrorCode::kInProgress, "the communicator's init runs on its own thread"};
  }
  Status st = init();
  if (!st.isOk()) out->reset();
  return st;
}

Status Communicator::createFromEnvironment(std::unique_ptr<Communicator>* out) {
  bootstrap::LaunchInfo info;
  if (!bootstrap::detectLauncher(&info)) {
    return invalidUsage("no launcher environment found (torchrun RANK/WORLD_SIZE, OMPI_COMM_WORLD_*, SLURM_*, PMI_*)");
  }
  UniqueId id;
  CHORUS_TRY(bootstrap::launchUniqueId(info, &id));
  Status st = create(id, info.size, info.rank, out);
  bootstrap::removeRendezvousFile(info);
  return st;
}

Status Communicator::createLocal(int nranks, std::vector<std::unique_ptr<Communicator>>* out) {
  if (nranks < 1 || nranks > kMaxRanks) {
    return invalidArgument("createLocal: nranks " + std::to_string(nranks) + " outside [1, " +
                           std::to_string(kMaxRanks) + "]");
  }
  UniqueId id;
  CHORUS_TRY(UniqueId::create(&id));
  out->clear();
  out->resize(nranks);
  CHORUS_TRY(groupStart());
  for (int r = 0; r < nranks; ++r) {
    Status st = create(id, nranks, r, &(*out)[r]);
    if (!st.isOk()) {
      (void)groupEnd();
      return st;
    }
  }
  return groupEnd();
}

Status Communicator::split(int color, int key, std::unique_ptr<Communicator>* out) {
  if (!out) return invalidArgument("split: null output");
  if (color < kNoColor)
    return invalidArgument("split: color " + std::to_string(color) + " is negative (colors are >= 0, or " +
                           std::to_string(kNoColor) + " for no communicator)");
  if (group::active()) return splitInGroup(color, key, out);
  OwnerCall call(impl_->gate());
  if (!call.entered()) return remoteError("split: the communicator was aborted");
  std::unique_ptr<CommImpl> child;
  CHORUS_TRY(impl_->split(color, key, &child));
  out->reset(child ? new Communicator(std::move(child)) : nullptr);
  return Status::ok();
}

Status Communicator::shrink(const std::vector<int>& excluded, std::unique_ptr<Communicator>* out) {
  if (!out) return invalidArgument("shrink: null output");
  std::vector<int> sorted = excluded;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i) {
    const int r = sorted[i];
    if (r < 0 || r >= size())
      return invalidArgument("shrink: excluded rank " + std::to_string(r) + " outside [0, " + std::to_string(size()) +
                             ")");
    if (i > 0 && sorted[i - 1] == r) return invalidArgument("shrink: rank " + std::to_string(r) + " excluded twice");
    if (r == rank()) return invalidArgument("shrink: this rank (" + std::to_string(r) + ") is in its exclude list");
  }
  if (group::active()) return invalidUsage("shrink: not supported inside a group");
  // An aborted communicator's gate stays closed, but nothing runs in it any more: only its rendezvous is used.
  OwnerCall call(impl_->gate());
  if (!call.entered() && !impl_->aborted()) return remoteError("shrink: the communicator is being destroyed");
  std::unique_ptr<CommImpl> child;
  CHORUS_TRY(impl_->shrink(sorted, &child));
  out->reset(new Communicator(std::move(child)));
  return Status::ok();
}

// Inside a group the split is collective with the group's other inits and splits, which one thread may issue for
// several ranks: it runs at groupEnd, concurrently with them. The caller gets its communicator now (null for
// kNoColor, which it knows alone); its real state is put in place when the split has run.
Status Communicator::splitInGroup(int color, int key, std::unique_ptr<Communicator>* out) {
  std::unique_ptr<Communicator> pending;
  if (color != kNoColor)  // a placeholder of one rank, not initialized: calls on it fail until groupEnd
    pending.reset(new Communicator(std::make_shared<CommImpl>(0, 1, impl_->config())));
  group::deferInit([parent = impl_, color, key, target = pending.get()]() -> Status {
    std::unique_ptr<CommImpl> child;
    CHORUS_TRY(parent->split(color, key, &child));
    if (target && child) target->impl_ = std::move(child);
    return Status::ok();
  });
  *out = std::move(pending);
  return Status::ok();
}

Status Communicator::agree(uint32_t* value, std::vector<int>* members, double graceSeconds) {
  if (!value || !members) return invalidArgument("agree: null value or members");
  if (!(graceSeconds > 0)) return invalidArgument("agree: graceSeconds must be positive");
  if (group::active()) return invalidUsage("agree: not supported inside a group");
  OwnerCall call(impl_->gate());
  if (!call.entered() && !impl_->aborted()) return remoteError("agree: the communicator is being destroyed");
  return impl_->agree(value, members, graceSeconds);
}

int Communicator::rank() const { return impl_->rank(); }
int Communicator::size() const { return impl_->size(); }
Status Communicator::setTimeout(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0)
    return invalidArgument("setTimeout: " + std::to_string(seconds) + " s is not a finite number >= 0");
  impl_->setTimeout(seconds);
  return Status::ok();
}

void Communicator::abort() { impl_->abort(); }
void Communicator::revoke() {
  impl_->abortFor(remoteError("rank " + std::to_string(rank()) + " revoked the communicator"));
}
Status Communicator::asyncError() const { return impl_->asyncError(); }
bool Communicator::blocking() const { return impl_->blocking(); }
void Communicator::setDeterministic(bool on) {
  OwnerCall call(impl_->gate());
  if (call.entered()) impl_->setDeterministic(on);
}
TrafficCounters Communicator::counters() const { return impl_->counters(); }
void Communicator::resetCounters() { impl_->resetCounters(); }
std::vector<CallMetrics> Communicator::metrics() const { return impl_->metrics(); }
std::string Communicator::metricsText(MetricsFormat format) const {
  return formatMetrics(impl_->metrics(), format, impl_->commName(), rank());
}
Status Communicator::dumpFlightRecord(const std::string& dir, std::string* path) const {
  if (dir.empty()) return invalidArgument("dumpFlightRecord: empty directory");
  return impl_->dumpFlightRecord(dir, "request", path);
}

namespace {
// An empty collective moves nothing on any rank (NCCL treats count 0 as a no-op). Send/Recv still go through: their
// size check catches a peer that expects data.
bool movesNothing(const Operation& op) {
  const bool p2p = op.type == CollType::kSend || op.type == CollType::kRecv;
  return op.count == 0 && !p2p && op.type != CollType::kAlltoAllv;
}

// A call on an aborted communicator: the error names why it was aborted when that was not abort() itself (a revoke,
// a silent rank).
Status abortedError(const CommImpl& impl, const char* name) {
  const std::string cause = impl.asyncError().message();
  const bool plain = cause.empty() || cause.rfind("the communicator was aborted", 0) == 0;
  return remoteError(std::string(name) + ": the communicator was aborted" + (plain ? "" : " (" + cause + ")"));
}

// runOperation() past its first checks: a call other than the last one, or the last one where it may no longer be
// repeated.
[[gnu::noinline]] Status runChecked(CommImpl& impl, Operation& op) {
  // A nonblocking communicator's init may still be queued ahead of this call; its worker reports a failed init.
  if (impl.blocking() && !impl.initialized()) {
    return invalidUsage("communicator is not initialized (did its init fail?)");
  }
  CHORUS_TRY(impl.validator().check(op, impl.rank(), impl.size()));
  if (movesNothing(op)) return Status::ok();
  CHORUS_TRY(gpu::placeOperation(&op, impl.rank(), impl.size()));
  if (group::active()) {
    group::deferOperation(&impl, std::move(op));
    return Status::ok();
  }
  // Device buffers: enqueued on the caller's stream, complete (as NCCL's calls are) once enqueued.
  if (op.onDevice) return gpu::enqueueOnStream(impl, {std::move(op)});
  if (!impl.blocking()) {
    (void)impl.submit(std::move(op));
    return {ErrorCode::kInProgress, "queued on the communicator's thread"};
  }
  // Where no CUDA device is seen the placement above is host memory whatever the pointers: a call that repeats
  // this one's arguments, its buffers aside, needs none of the checks above again.
  if (!gpu::available()) impl.validator().markRepeatable();
  return impl.execute(op);
}

// A call that repeats the last one (a training step's, a benchmark's loop), on its buffers or on others that pass the
// same checks, goes from the gate to the execution: its checks and path are the last call's. Outside a group only:
// inside one it is deferred as any other.
inline Status runOperation(CommImpl& impl, Operation op) {
  OwnerCall call(impl.gate());
  if (!call.entered()) return abortedError(impl, algo::collName(op.type));
  if (impl.validator().repeats(op) && !group::active()) return impl.execute(op);
  return runChecked(impl, op);
}

Request submitOperation(CommImpl& impl, Operation op) {
  OwnerCall call(impl.gate());
  const char* name = algo::collName(op.type);
  Status st = !call.entered() ? abortedError(impl, name)
              : group::active()
                  ? invalidUsage(std::string(name) + ": an async call inside a group (use the blocking call there)")
              : impl.initialized() || !impl.blocking()
                  ? impl.validator().check(op, impl.rank(), impl.size())
                  : invalidUsage("communicator is not initialized (did its init fail?)");
  if (!st.isOk()) return finishedRequest(st);
  if (movesNothing(op)) return finishedRequest(Status::ok());
  st = gpu::placeOperation(&op, impl.rank(), impl.size());
  // Device buffers: the call is complete once enqueued on its stream, as the blocking one is.
  if (st.isOk() && op.onDevice) st = gpu::enqueueOnStream(impl, {op});
  if (!st.isOk() || op.onDevice) return finishedRequest(st);
  return impl.submit(std::move(op));
}

// AlltoAllv's counts and displacements, copied: the caller's arrays may be gone before an async call runs.
Status variableOperation(const CollArgs& a, int nranks, Operation* out) {
  if (!a.sendCounts || !a.sendDispls || !a.recvCounts || !a.recvDispls) {
    return invalidArgument("AlltoAllv: null counts or displacements");
  }
  *out = makeOp(CollType::kAlltoAllv, a.send, a.recv, 0, a.type);
  const size_t n = static_cast<size_t>(nranks);
  auto layout = std::make_shared<algo::VariableLayout>();
  layout->sendCounts.assign(a.sendCounts, a.sendCounts + n);
  layout->sendDispls.assign(a.sendDispls, a.sendDispls + n);
  layout->recvCounts.assign(a.recvCounts, a.recvCounts + n);
  layout->recvDispls.assign(a.recvDispls, a.recvDispls + n);
  out->variable = std::move(layout);
  return Status::ok();
}

// A barrier is an AllReduce of one byte, in place in the communicator's own cell (its value means nothing).
Operation barrierOperation(CommImpl& impl) {
  return makeOp(CollType::kAllReduce, impl.barrierCell(), impl.barrierCell(), 1, DataType::kUint8, RedOp::max());
}

// The operation of `a`: its AlltoAllv counts copied, its algorithm selection interned.
Status operationOf(const CollArgs& a, int nranks, Operation* out) {
  if (a.coll == CollType::kAlltoAllv) {
    CHORUS_TRY(variableOperation(a, nranks, out));
  } else {
    *out = makeOp(a.coll, a.send, a.recv, a.count, a.type, a.op, a.root);
  }
  if (a.algorithms && *a.algorithms) {
    Status st = tuner::internSelection(a.algorithms, a.algorithmsRequired, &out->selection);
    if (!st.isOk()) return st.withContext(algo::collName(a.coll));
  }
  return Status::ok();
}
}  // namespace

Status Communicator::run(const CollArgs& a) {
  // The plain call, the most common, without a detour.
  if (a.coll != CollType::kAlltoAllv && !a.algorithms)
    return runOperation(*impl_, makeOp(a.coll, a.send, a.recv, a.count, a.type, a.op, a.root));
  Operation op;
  CHORUS_TRY(operationOf(a, size(), &op));
  return runOperation(*impl_, std::move(op));
}
Request Communicator::submit(const CollArgs& a) {
  Operation op;
  Status st = operationOf(a, size(), &op);
  return st.isOk() ? submitOperation(*impl_, std::move(op)) : finishedRequest(st);
}
Status Communicator::barrier() { return runOperation(*impl_, barrierOperation(*impl_)); }
Request Communicator::barrierAsync() { return submitOperation(*impl_, barrierOperation(*impl_)); }

}  // namespace chorus

#include "comm/dispatcher.hpp"

#include <algorithm>

#include "kernels/reduce.hpp"

namespace chorus {

Dispatcher::Dispatcher(int rank, int nranks, observe::MetricsTable* metrics,
                       std::function<std::unique_ptr<engine::Execution>()> makeExecution)
    : rank_(rank), nranks_(nranks), metrics_(metrics), makeExecution_(std::move(makeExecution)) {}

void Dispatcher::setUp(Setup setup) { setup_ = std::move(setup); }

void Dispatcher::setDeterministic(bool on) {
  if (setup_.selector.deterministic == on) return;
  setup_.selector.deterministic = on;
  plans_.clear();  // chosen under the other mode
  bound_.clear();
}

size_t Dispatcher::releasableBytes() const {
  size_t bytes = scratch_.capacity();
  for (const auto& [key, cached] : plans_) bytes += cached.plan.steps.capacity() * sizeof(algo::Step);
  return bytes;
}

void Dispatcher::releaseBuffers() {
  bound_.clear();  // its steps point into the scratch
  plans_.clear();
  std::vector<std::byte>().swap(scratch_);
}

std::byte* Dispatcher::scratch(size_t bytes) {
  if (scratch_.size() < bytes) {
    scratch_.clear();
    scratch_.shrink_to_fit();
    scratch_.resize(bytes);
  }
  return scratch_.data();
}

const Dispatcher::CachedPlan* Dispatcher::plan(const algo::CollShape& shape, const tuner::CallSelection* selection) {
  auto key = std::make_tuple(static_cast<int>(shape.type), shape.count, shape.elemSize, shape.root, selection);
  auto it = plans_.find(key);
  if (it != plans_.end()) return &it->second;
  const algo::Algorithm* a = tuner::choose(shape, setup_.selector, selection);
  if (!a) return nullptr;
  CachedPlan cached{a->generate(shape), {}};
  cached.choice.wire = algo::wireBytes(cached.plan, rank_);
  cached.choice.algorithm = a->name;
  cached.choice.predictedMicros = static_cast<float>(tuner::predict(*a, shape, setup_.selector.costs));
  cached.choice.metrics = metrics_->cell(static_cast<uint8_t>(shape.type), a->name);
  return &plans_.emplace(key, std::move(cached)).first->second;
}

Status Dispatcher::planOnPeerMemory(const Operation& op, size_t slotBytes, size_t oneShotBytes,
                                    algo::peer::Plan* out) const {
  algo::CollShape shape{op.type, nranks_, rank_, op.count, dataTypeSize(op.dtype), op.root};
  shape.memory = algo::Memory::kPeer;
  const bool reduces = op.type == algo::CollType::kAllReduce || op.type == algo::CollType::kReduceScatter ||
                       op.type == algo::CollType::kReduce;
  shape.peer = {slotBytes, oneShotBytes, inPlace(op, rank_, nranks_), reduces && op.op.kind == RedOpKind::kPreMulSum};
  const algo::Algorithm* a = tuner::choose(shape, setup_.selector, op.selection);
  if (!a && op.selection) return unselectable(op, shape);
  if (!a) return invalidUsage(std::string("no algorithm runs ") + algo::collName(op.type) + " over peer memory");
  *out = a->generatePeer(shape);
  return Status::ok();
}

Status Dispatcher::unselectable(const Operation& op, const algo::CollShape& shape) const {
  return invalidArgument(
      std::string(algo::collName(op.type)) + ": the call's algorithm selection '" + op.selection->text() +
      "' allows none that can run it (these can: " + tuner::runnableNames(shape, setup_.selector) + ")");
}

namespace {

// A call on buffers other than the last call's (a training step's fresh activations, a pool) finds them out of the
// cache: their lines, asked for here, arrive while the call is rewound and its peers' messages awaited, instead of
// one miss after another inside its steps. Only small buffers (engine::kPrefetchedBufferBytes says why).

// The lines of `bytes` from `at`, an unaligned start's first line included; kWrite as __builtin_prefetch's rw.
template <int kWrite>
void prefetchLines(const void* at, size_t bytes) {
  constexpr uintptr_t kLine = 64;
  const uintptr_t end = reinterpret_cast<uintptr_t>(at) + bytes;
  for (uintptr_t line = reinterpret_cast<uintptr_t>(at) & ~(kLine - 1); line < end; line += kLine)
    __builtin_prefetch(reinterpret_cast<const void*>(line), kWrite);
}

void prefetchSmall(const void* send, const void* recv, const BufferExtents& extents) {
  if (extents.sendBytes <= engine::kPrefetchedBufferBytes) prefetchLines<0>(send, extents.sendBytes);
  if (extents.recvBytes <= engine::kPrefetchedBufferBytes) prefetchLines<1>(recv, extents.recvBytes);
}

}  // namespace

// Bound operation `i`'s steps pointed at `op`'s buffers where they are others than its last call's.
inline void Dispatcher::pointAt(size_t i, const Operation& op) {
  BoundOperation& bound = bound_[i];
  if (op.send == bound.send && op.recv == bound.recv) return;
  prefetchSmall(op.send, op.recv, bound.extents);
  execution_->retarget(i, op.send, op.recv);
  bound.send = op.send;
  bound.recv = op.recv;
}

// The same call as last time: its bound steps still hold, once pointed at this call's buffers.
engine::Execution* Dispatcher::rebind(const Operation& op) {
  BoundOperation& bound = bound_.front();
  pointAt(0, op);
  observe::MetricsTable::addCall(bound.metrics, bound.payload, bound.wire);
  lastAlgorithm_ = bound.algorithm;
  execution_->setStreamingFrom(0, streamingFrom(op.send, op.recv, bound.extents));
  execution_->rewind(++sequence_);
  return execution_.get();
}

bool Dispatcher::repeats(std::span<const Operation> ops) const {
  if (bound_.size() != ops.size()) return false;
  for (size_t i = 0; i < ops.size(); ++i)
    if (!bound_[i].sameCall(ops[i])) return false;
  return true;
}

// A group repeated, on the same buffers or others (a framework's coalesced calls each step, a pipeline's batched
// Send/Recv each micro-batch): its plans, scratch and steps stand. Binding a group anew took about a third of a 4-call
// group's instructions (1-rank AllReduce of 8 B, `-m 4`).
engine::Execution* Dispatcher::rebind(std::span<const Operation> ops) {
  for (size_t i = 0; i < ops.size(); ++i) {
    const Operation& op = ops[i];
    BoundOperation& bound = bound_[i];
    pointAt(i, op);
    observe::MetricsTable::addCall(bound.metrics, bound.payload, bound.wire);
    execution_->setStreamingFrom(i, streamingFrom(op.send, op.recv, bound.extents));
  }
  execution_->rewind(++sequence_);
  return execution_.get();
}

// Out of line, so that the repeated call's path above stays short.
[[gnu::noinline]] Status Dispatcher::bindAnew(std::span<const Operation> ops, std::vector<Choice>* choices,
                                              engine::Execution** out) {
  if (!execution_) execution_ = makeExecution_();
  bound_.clear();
  choices->clear();
  CHORUS_TRY(checkSelfExchanges(ops, rank_));
  ++sequence_;

  // Plans first, to size one scratch area for the whole call.
  // AlltoAllv plans depend on the counts and are not cached; reserved up front so pointers to them stay valid.
  std::vector<algo::Plan> uncached;
  const auto variable =
      std::count_if(ops.begin(), ops.end(), [](const Operation& op) { return op.type == algo::CollType::kAlltoAllv; });
  if (variable > 0) uncached.reserve(static_cast<size_t>(variable));
  std::vector<const algo::Plan*>& plans = planOfOp_;
  // The cache is bounded, so that a sweep over many sizes cannot grow it without end, and emptied before a call
  // binds, never while it does: the plans of a group's first operations must outlive the lookups of its later ones.
  if (plans_.size() + ops.size() > engine::kMaxCachedPlans) plans_.clear();
  algorithmOfOp_.clear();
  std::vector<size_t>& offsets = scratchOffsets_;  // per op: scratch of its plan, then its pre-multiplied input
  plans.clear();
  offsets.clear();
  size_t scratchTotal = 0;
  uint64_t callPayload = 0;  // the operations' payloads summed: the call's size for its wait's spin
  for (const Operation& op : ops) {
    algo::CollShape shape{op.type,     nranks_,          rank_, op.count, dataTypeSize(op.dtype), op.root,
                          op.variable, setup_.hostLayout};
    // The algorithm is chosen once per shape (cached with its plan), not on every call.
    const algo::Plan* chosen = nullptr;
    Choice choice;
    if (op.type == algo::CollType::kAlltoAllv) {
      if (const algo::Algorithm* a = tuner::choose(shape, setup_.selector, op.selection)) {
        chosen = &uncached.emplace_back(a->generate(shape));
        choice.wire = algo::wireBytes(*chosen, rank_);
        choice.algorithm = a->name;
        choice.predictedMicros = static_cast<float>(tuner::predict(*a, shape, setup_.selector.costs));
        choice.metrics = metrics_->cell(static_cast<uint8_t>(op.type), a->name);
      }
    } else if (const CachedPlan* cached = plan(shape, op.selection)) {
      chosen = &cached->plan;
      choice = cached->choice;
    }
    if (!chosen && op.selection) return unselectable(op, shape);
    if (!chosen) return internalError(std::string("no algorithm for ") + algo::collName(op.type));
    lastAlgorithm_ = choice.algorithm;
    algorithmOfOp_.push_back(choice.algorithm);
    choice.payload = payloadBytes(op, nranks_);
    callPayload += choice.payload;
    observe::MetricsTable::addCall(choice.metrics, choice.payload, choice.wire);
    choices->push_back(choice);
    plans.push_back(chosen);
    offsets.push_back(scratchTotal);
    scratchTotal += (plans.back()->scratchBytes + 63) & ~size_t{63};
    // PreMulSum scales this rank's input into scratch before the reduction starts.
    size_t premul = op.op.kind == RedOpKind::kPreMulSum ? reductionInputCount(op, rank_, nranks_) : 0;
    offsets.push_back(scratchTotal);
    scratchTotal += (premul * dataTypeSize(op.dtype) + 63) & ~size_t{63};
  }
  std::byte* base = scratch(scratchTotal);
  std::vector<engine::BoundPlan>& bound = boundPlans_;
  bound.clear();
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
    bound.push_back({plans[i], b});
  }
  const engine::CallSignature signature = signatureOf(ops);
  execution_->bind(bound,
                   {algo::collName(ops.front().type), sequence_, setup_.waitSpins.forCall(callPayload), &signature});
  // Remember the call for a rewind, unless a binding depends on more than its arguments (AlltoAllv's counts,
  // PreMulSum's scaled copy of the input).
  const bool rebindable = std::none_of(ops.begin(), ops.end(), [](const Operation& op) {
    return op.type == algo::CollType::kAlltoAllv || op.op.kind == RedOpKind::kPreMulSum;
  });
  for (size_t i = 0; rebindable && i < ops.size(); ++i) {
    const Operation& op = ops[i];
    const Choice& c = (*choices)[i];
    bound_.push_back({op.type, op.send, op.recv, op.count, op.dtype, op.op.kind, op.root, c.payload, c.wire,
                      bufferExtents(op, rank_, nranks_), c.algorithm, c.metrics, op.selection});
  }
  *out = execution_.get();
  return Status::ok();
}

// Steps into a receive buffer out of the cache stream from CHORUS_COLD_STREAMING (64 KiB): a plain store would
// first read each line from memory. Measured cold against 2 MiB and 256 KiB thresholds at 4 and 8 ranks
// (perf/archive/2026-11-28-streaming-stores-into-receive-buffers-out-of-the-cache-judge.md); those pools held zeros,
// which streaming stores write faster than data, and with data the gain shrank to a few collectives and sizes
// (perf/archive/2026-11-29-buffers-full-of-zeros-streaming-stores-measured-too-fast.md).
size_t Dispatcher::streamingFrom(const void* send, const void* recv, const BufferExtents& extents) {
  // Smaller calls are not noted: their few bytes evict little.
  if (setup_.coldStreamingFrom == 0 || extents.recvBytes < setup_.coldStreamingFrom) return setup_.cachedStreamingFrom;
  // An in-place call's send buffer holds its receive buffer (or is held by it).
  const auto* sendAt = static_cast<const std::byte*>(send);
  const auto* recvAt = static_cast<const std::byte*>(recv);
  const bool overlap = sendAt < recvAt + extents.recvBytes && recvAt < sendAt + extents.sendBytes;
  const size_t footprint =
      overlap ? std::max(extents.recvBytes, extents.sendBytes) : extents.recvBytes + extents.sendBytes;
  const bool cached = setup_.residency.touch(recv, footprint);
  return cached ? setup_.cachedStreamingFrom : setup_.coldStreamingFrom;
}

engine::CallSignature Dispatcher::signatureOf(std::span<const Operation> ops) const {
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

void Dispatcher::divideAverage(const Operation& op) const {
  const size_t n = reductionOutputCount(op, rank_, nranks_);
  if (n > 0) kernels::divide(op.recv, n, op.dtype, nranks_);
}

}  // namespace chorus

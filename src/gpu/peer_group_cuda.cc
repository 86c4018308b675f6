// Calls on a peer-memory group: each step enqueued on the caller's stream, the barriers between, the watchdog that
// follows each call to its end; and the entry points the dispatcher uses (gpu/peer_group.hpp).
#include "gpu/peer_group_cuda.hpp"

#include <cstring>
#include <functional>

#include "core/deadline.hpp"
#include "core/log.hpp"
#include "gpu/one_kernel_fit.hpp"

namespace chorus::gpu {
namespace peer_memory {
namespace {

// The device holding the call's buffers (the communicator's device, as NCCL requires).
int deviceOf(const Operation& op) {
  cudaPointerAttributes a{};
  const void* p = op.recv ? static_cast<const void*>(op.recv) : op.send;
  if (!p || cudaPointerGetAttributes(&a, p) != cudaSuccess || a.device < 0) {
    (void)cudaGetLastError();
    int current = 0;
    (void)cudaGetDevice(&current);
    return current;
  }
  return a.device;
}

std::string describe(algo::CollType type, size_t count, DataType dtype) {
  return std::string(algo::collName(type)) + " of " + std::to_string(count) + " x " + dataTypeName(dtype);
}

}  // namespace

bool PeerGroup::peersFinished(Clock::time_point deadline) {
  std::vector<uint32_t> done(n_);
  while (true) {
    if (cudaMemcpyAsync(done.data(), own_ + kDoneAt, n_ * sizeof(uint32_t), cudaMemcpyDeviceToHost, side_) !=
            cudaSuccess ||
        cudaStreamSynchronize(side_) != cudaSuccess) {
      return false;
    }
    bool all = true;
    for (int q = 0; q < n_; ++q)
      if (q != rank_ && static_cast<int32_t>(done[q] - calls_) < 0) all = false;
    if (all) return true;
    if (Clock::now() > deadline) {
      CHORUS_WARN(kInit, "rank %d: peers did not finish their last device call; its device memory is not freed", rank_);
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void* PeerGroup::address(const Ref& ref, const Operation& op, uint64_t parity) const {
  switch (ref.place) {
    case Place::kSend:
      return const_cast<char*>(static_cast<const char*>(op.send)) + ref.offset;
    case Place::kRecv:
      return static_cast<char*>(op.recv) + ref.offset;
    case Place::kSlot:
      break;
  }
  return slot(ref.rank, parity) + ref.offset;
}

Status PeerGroup::barrier(cudaStream_t stream) {
  const uint32_t b = barriers_.load(std::memory_order_relaxed) + 1;
  memOps_.clear();
  for (int q = 0; q < n_; ++q)
    if (q != rank_) memOps_.push_back(writeOp(flagWord(q, kArrivalsAt, rank_), b));
  for (int q = 0; q < n_; ++q)
    if (q != rank_) memOps_.push_back(waitOp(flagWord(rank_, kArrivalsAt, q), b));
  // Counted before the waits are enqueued: releaseWaits() must cover every wait that may be on the stream.
  barriers_.store(b, std::memory_order_release);
  return runMemOps(stream, memOps_, "a barrier of the device path");
}

Status PeerGroup::runPhase(const Phase& phase, const Operation& op, uint64_t parity, cudaStream_t stream) {
  copies_.clear();
  scaledCopies_.clear();
  for (const Move& m : phase.moves) {
    DeviceCopy c{address(m.from, op, parity), address(m.to, op, parity), m.bytes};
    (m.scaled ? scaledCopies_ : copies_).push_back(c);
  }
  CHORUS_TRY(launchCopies(copies_.data(), static_cast<int>(copies_.size()), stream));
  if (!scaledCopies_.empty()) {
    CHORUS_TRY(launchScaledCopies(scaledCopies_.data(), static_cast<int>(scaledCopies_.size()), op.dtype, op.op.scalar,
                                  op.op.scalarOnDevice, stream));
  }
  for (const Combine& c : phase.combines) {
    const void* from[kMaxRanks];
    for (int q = 0; q < n_; ++q) from[q] = slot(q, parity) + c.slotOffset;
    void* to = address(c.to[0], op, parity);
    void* alsoTo = c.to.size() > 1 ? address(c.to[1], op, parity) : nullptr;
    CHORUS_TRY(launchReduce(from, n_, to, alsoTo, c.count, op.dtype, op.op.kind, stream));
  }
  return Status::ok();
}

Status PeerGroup::begin(const Operation& op, cudaStream_t stream, PeerCall* call) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (failed_) return comm_.asyncError();
  }
  call->op = op;
  call->stream = stream;
  CHORUS_TRY(comm_.planOnPeerMemory(op, slotBytes_, oneShotBytes_, &call->plan));
  call->next = 0;
  call->oneKernel = runsAsOneKernel(call->plan, n_, dataTypeSize(op.dtype), oneKernelBytes_);
  call->finished = false;
  if (lastDone_ && stream != lastStream_) {
    DeviceScope onDevice(device_);
    CHORUS_CUDA_TRY(cudaStreamWaitEvent(stream, lastDone_, 0), "cudaStreamWaitEvent (the previous call's end)");
  }
  return Status::ok();
}

OneKernelStep PeerGroup::oneKernelStep(const Step* step, const Operation& op, uint64_t parity) {
  OneKernelStep k;
  auto fill = [&](const Phase& phase, KernelMove* moves, int* count) {
    for (const Move& m : phase.moves)
      moves[(*count)++] = {address(m.from, op, parity), address(m.to, op, parity), m.bytes, m.scaled};
  };
  auto word = [](char* at) { return reinterpret_cast<uint32_t*>(at); };
  for (int q = 0; q < n_; ++q) {
    if (q == rank_) continue;
    k.arriveAt[k.peers] = word(flagWord(q, kArrivalsAt, rank_));
    k.waitOn[k.peers] = word(flagWord(rank_, kArrivalsAt, q));
    k.doneAt[k.peers] = word(flagWord(q, kDoneAt, rank_));
    ++k.peers;
  }
  k.hasBarrier = !step || step->phases.size() == 2;
  k.barrier = barriers_.load(std::memory_order_relaxed) + 1;
  k.done = step ? calls_ + 1 : calls_;  // a barrier alone is no call
  k.blocksMet = word(own_ + kBlocksMetAt);
  k.blocksMetBefore = blocksMet_;
  if (!step) return k;
  fill(step->phases[0], k.before, &k.beforeCount);
  if (!k.hasBarrier) return k;
  fill(step->phases[1], k.after, &k.afterCount);
  for (const Combine& c : step->phases[1].combines) {
    for (int q = 0; q < n_; ++q) k.sources[q] = slot(q, parity) + c.slotOffset;
    k.sourceCount = n_;
    k.count = c.count;
    k.to = address(c.to[0], op, parity);
    k.alsoTo = c.to.size() > 1 ? address(c.to[1], op, parity) : nullptr;
    k.divideBy = op.op.kind == RedOpKind::kAvg ? n_ : 0;
  }
  return k;
}

Status PeerGroup::launchOneKernel(const OneKernelStep& k, unsigned blocks, const Operation& op, cudaStream_t stream) {
  // Counted before the launch: releaseWaits() must cover the kernel's wait.
  if (k.hasBarrier) barriers_.store(k.barrier, std::memory_order_release);
  CHORUS_TRY(launchOneKernelStep(k, blocks, op.dtype, op.op.kind, op.op.scalar, op.op.scalarOnDevice, stream));
  blocksMet_ += blocks * ((k.hasBarrier ? 1 : 0) + (k.peers > 0 ? 1 : 0));
  return Status::ok();
}

Status PeerGroup::enqueueOneKernel(PeerCall& call) {
  const Step& step = call.plan.steps[0];
  const uint64_t parity = steps_++ % 2;
  const unsigned blocks = oneKernelBlocks(algo::peer::movedBytes(step, n_, dataTypeSize(call.op.dtype)));
  CHORUS_TRY(launchOneKernel(oneKernelStep(&step, call.op, parity), blocks, call.op, call.stream));
  ++calls_;
  call.next = call.plan.steps.size();
  call.finished = true;
  return track(call.op, call.stream);
}

Status PeerGroup::enqueueStep(PeerCall& call) {
  DeviceScope onDevice(device_);
  if (call.oneKernel) return enqueueOneKernel(call);
  if (call.next < call.plan.steps.size()) {
    const Step& step = call.plan.steps[call.next++];
    const uint64_t parity = steps_++ % 2;
    for (size_t i = 0; i < step.phases.size(); ++i) {
      if (i > 0) CHORUS_TRY(barrier(call.stream));
      CHORUS_TRY(runPhase(step.phases[i], call.op, parity, call.stream));
    }
    if (call.next < call.plan.steps.size()) return Status::ok();
  }
  // The call's end: tell the peers it is done with their memory (read at teardown), and follow it to its end.
  ++calls_;
  memOps_.clear();
  for (int q = 0; q < n_; ++q)
    if (q != rank_) memOps_.push_back(writeOp(flagWord(q, kDoneAt, rank_), calls_));
  CHORUS_TRY(runMemOps(call.stream, memOps_, "the end of a call on the device path"));
  call.finished = true;
  return track(call.op, call.stream);
}

Status PeerGroup::track(const Operation& op, cudaStream_t stream) {
  cudaEvent_t done = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!spareEvents_.empty()) {
      done = spareEvents_.back();
      spareEvents_.pop_back();
    }
  }
  if (!done) CHORUS_CUDA_TRY(cudaEventCreateWithFlags(&done, cudaEventDisableTiming), "cudaEventCreate");
  CHORUS_CUDA_TRY(cudaEventRecord(done, stream), "cudaEventRecord");
  lastStream_ = stream;
  lastDone_ = done;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    inFlight_.push_back({done, Clock::now(), TimeoutScope::seconds(), op.type, op.count, op.dtype});
  }
  wake_.notify_one();
  return Status::ok();
}

void PeerGroup::releaseWaits() {
  const uint32_t b = barriers_.load(std::memory_order_acquire);
  std::vector<CUstreamBatchMemOpParams> ops;
  for (int q = 0; q < n_; ++q)
    if (q != rank_) ops.push_back(writeOp(flagWord(rank_, kArrivalsAt, q), b));
  (void)runMemOps(side_, ops, "releasing a failed call's waits");
}

void PeerGroup::watch() {
  (void)cudaSetDevice(device_);               // the releases' stream memory operations run on this device
  Clock::time_point progress = Clock::now();  // when the stream last finished a call
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    if (inFlight_.empty()) {
      wake_.wait(lock, [&] { return stopping_ || !inFlight_.empty(); });
      progress = Clock::now();
      continue;
    }
    InFlight& f = inFlight_.front();
    auto what = [&] { return describe(f.type, f.count, f.dtype); };
    const cudaError_t state = cudaEventQuery(f.done);
    if (state != cudaErrorNotReady) {
      if (state != cudaSuccess && !failed_) {
        failed_ = true;
        (void)comm_.recordFailure(cudaError(state, "a call on the device path (" + what() + ")"));
      }
      spareEvents_.push_back(f.done);
      inFlight_.pop_front();
      progress = Clock::now();
      continue;
    }
    if (!failed_) {
      const Clock::time_point start = std::max(progress, f.enqueued);
      if (comm_.aborted()) {
        failed_ = true;
      } else if (Clock::now() - start > std::chrono::duration<double>(f.timeoutSeconds)) {
        failed_ = true;
        CHORUS_WARN(kColl, "rank %d: %s on device memory did not complete within %.0f s", rank_, what().c_str(),
                    f.timeoutSeconds);
        (void)comm_.recordFailure(timeoutError(
            "rank " + std::to_string(rank_) + ": " + what() + " on device memory did not complete within " +
            std::to_string(static_cast<int>(f.timeoutSeconds)) +
            " s (CHORUS_TIMEOUT): a peer did not reach it (dead, stopped, or in another call), or the stream's "
            "earlier work did not finish"));
      }
    }
    // A failed communicator's streams must still drain: each pass releases the waits enqueued so far.
    if (failed_) releaseWaits();
    wake_.wait_for(lock, std::chrono::microseconds(failed_ ? 1000 : 200));
  }
}

}  // namespace peer_memory

using peer_memory::deviceOf;
using peer_memory::PeerCall;
using peer_memory::PeerGroup;

namespace {

// A communicator's state in HostComm::peerMemory(): its group, or none where its calls are staged.
struct PeerMemory {
  std::unique_ptr<PeerGroup> group;
};

}  // namespace

Status preparePeerMemory(HostComm& comm, const std::vector<Operation>& ops, bool* usable) {
  *usable = false;
  if (!settings()[kPeerMemory]) return Status::ok();
  for (const Operation& op : ops)
    if (!algo::findAlgorithm(op.type, "", algo::Memory::kPeer)) return Status::ok();
  std::shared_ptr<void>& state = comm.peerMemory();
  if (!state) {
    auto memory = std::make_shared<PeerMemory>();
    auto group = std::make_unique<PeerGroup>(comm, deviceOf(ops.front()));
    std::string why;
    CHORUS_TRY(group->setUp(&why));
    if (why.empty()) {
      memory->group = std::move(group);
      CHORUS_INFO(kInit, "rank %d: calls on device memory run on the GPU, over the ranks' device memory", comm.rank());
    } else {
      CHORUS_INFO(kInit, "rank %d: calls on device memory are staged through host memory: %s", comm.rank(),
                  why.c_str());
    }
    state = memory;
  }
  *usable = static_cast<PeerMemory*>(state.get())->group != nullptr;
  return Status::ok();
}

namespace {

// Prepares the communicators of a group's calls. Their set-ups are collectives among each communicator's ranks, so
// where one thread drives several ranks of a communicator (a group over several devices), they run at once, a
// thread each: one after the other, the first would wait for a rank that the same thread has yet to set up.
Status prepareAll(const std::vector<CommCalls>& calls, std::vector<bool>* usable) {
  std::vector<const CommCalls*> fresh;
  for (const CommCalls& c : calls)
    if (!c.comm->peerMemory()) fresh.push_back(&c);
  if (fresh.size() > 1) {
    std::vector<Status> results(fresh.size());
    std::vector<std::thread> setUps;
    for (size_t i = 0; i < fresh.size(); ++i) {
      setUps.emplace_back([&, i] {
        bool ignored = false;
        results[i] = preparePeerMemory(*fresh[i]->comm, fresh[i]->ops, &ignored);
      });
    }
    for (std::thread& t : setUps) t.join();
    for (const Status& st : results) CHORUS_TRY(st);
  }
  for (size_t i = 0; i < calls.size(); ++i) {
    bool u = false;
    CHORUS_TRY(preparePeerMemory(*calls[i].comm, calls[i].ops, &u));  // set up above, or now
    (*usable)[i] = u;
  }
  return Status::ok();
}

}  // namespace

Status runOnPeerMemory(const std::vector<CommCalls>& calls, std::vector<bool>* ran) {
  ran->assign(calls.size(), false);
  // Each communicator's calls in order; the communicators' steps interleaved, one step of each in turn.
  struct Queue {
    PeerGroup* group;
    const CommCalls* calls;
    size_t op = 0;
    PeerCall current;
  };
  std::vector<bool> usable(calls.size(), false);
  CHORUS_TRY(prepareAll(calls, &usable));
  std::vector<Queue> queues;
  for (size_t i = 0; i < calls.size(); ++i) {
    if (!usable[i]) continue;
    (*ran)[i] = true;
    Queue q{static_cast<PeerMemory*>(calls[i].comm->peerMemory().get())->group.get(), &calls[i], 0, {}};
    CHORUS_TRY(q.group->begin(calls[i].ops.front(), static_cast<cudaStream_t>(calls[i].stream), &q.current));
    queues.push_back(std::move(q));
  }
  for (bool busy = true; busy;) {
    busy = false;
    for (Queue& q : queues) {
      if (q.op == q.calls->ops.size()) continue;
      busy = true;
      CHORUS_TRY(q.group->enqueueStep(q.current));
      if (q.current.finished && ++q.op < q.calls->ops.size()) {
        CHORUS_TRY(q.group->begin(q.calls->ops[q.op], static_cast<cudaStream_t>(q.calls->stream), &q.current));
      }
    }
  }
  return Status::ok();
}

}  // namespace chorus::gpu

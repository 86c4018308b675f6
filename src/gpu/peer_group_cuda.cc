#include <cuda.h>  // the driver's types; its functions are looked up at run time (the library links no libcuda)
#include <cuda_runtime.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "bootstrap/host_id.hpp"
#include "core/deadline.hpp"
#include "core/log.hpp"
#include "core/settings.hpp"
#include "gpu/device_kernels.hpp"
#include "gpu/one_kernel_fit.hpp"
#include "gpu/one_kernel_step.hpp"
#include "gpu/peer_group.hpp"
#include "gpu/runtime.hpp"

namespace chorus::gpu {
namespace {

using Clock = std::chrono::steady_clock;
using algo::peer::Combine;
using algo::peer::Move;
using algo::peer::Phase;
using algo::peer::Place;
using algo::peer::Ref;
using algo::peer::Step;

constexpr int kMaxRanks = 64;  // a reduction kernel's sources
// A rank's memory: the flags, then slot 0 and slot 1. Flags are 32-bit counters compared cyclically by the waits.
constexpr size_t kHeaderBytes = 4096;
constexpr size_t kArrivalsAt = 0;     // arrivals[q]: the last barrier rank q reached (written by q)
constexpr size_t kDoneAt = 256;       // done[q]: the last call rank q finished (written by q; read at teardown)
constexpr size_t kProbeAt = 512;      // a word the set-up checks the stream memory operations on
constexpr size_t kBlocksMetAt = 768;  // the one-kernel steps' meeting counter (gpu/one_kernel_step.hpp)

#define CHORUS_CUDA_TRY(call, what)                                 \
  do {                                                              \
    cudaError_t e_ = (call);                                        \
    if (e_ != cudaSuccess) return cudaError(e_, std::string(what)); \
  } while (0)

using BatchMemOpFn = CUresult (*)(CUstream, unsigned int, CUstreamBatchMemOpParams*, unsigned int);

// cuStreamBatchMemOp from the driver, or null where the driver has none.
BatchMemOpFn batchMemOp() {
  static const BatchMemOpFn fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuStreamBatchMemOp", &p, 12000, cudaEnableDefault, &found) != cudaSuccess ||
        found != cudaDriverEntryPointSuccess) {
      (void)cudaGetLastError();
      return static_cast<BatchMemOpFn>(nullptr);
    }
    return reinterpret_cast<BatchMemOpFn>(p);
  }();
  return fn;
}

CUstreamBatchMemOpParams writeOp(const char* at, uint32_t value) {
  CUstreamBatchMemOpParams p{};
  p.writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
  p.writeValue.address = reinterpret_cast<CUdeviceptr>(at);
  p.writeValue.value = value;
  p.writeValue.flags = CU_STREAM_WRITE_VALUE_DEFAULT;  // after a fence: what the stream wrote before is visible
  return p;
}

CUstreamBatchMemOpParams waitOp(const char* at, uint32_t value) {
  CUstreamBatchMemOpParams p{};
  p.waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_32;
  p.waitValue.address = reinterpret_cast<CUdeviceptr>(at);
  p.waitValue.value = value;
  p.waitValue.flags = CU_STREAM_WAIT_VALUE_GEQ;  // (int32_t)(*at - value) >= 0: counters may wrap
  return p;
}

Status runMemOps(cudaStream_t stream, std::vector<CUstreamBatchMemOpParams>& ops, const char* what) {
  if (ops.empty()) return Status::ok();
  CUresult r = batchMemOp()(reinterpret_cast<CUstream>(stream), static_cast<unsigned>(ops.size()), ops.data(), 0);
  if (r == CUDA_SUCCESS) return Status::ok();
  return {ErrorCode::kCudaError,
          std::string(what) + ": cuStreamBatchMemOp failed (CUresult " + std::to_string(r) + ")"};
}

// Makes `device` current for its lifetime (a group's calls may be made with another device current).
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    if (cudaGetDevice(&previous_) == cudaSuccess && previous_ != device && device >= 0) {
      switched_ = cudaSetDevice(device) == cudaSuccess;
    }
  }
  ~DeviceScope() {
    if (switched_) (void)cudaSetDevice(previous_);
  }

 private:
  int previous_ = -1;
  bool switched_ = false;
};

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

// What each rank tells the others at set-up.
struct SetupInfo {
  uint64_t machine = 0;
  uint64_t process = 0;  // bootstrap::processToken(): ranks of one process use each other's pointers as they are
  uint64_t address = 0;  // the memory, in its own process
  int32_t device = -1;
  int32_t ready = 0;  // this rank can take part (in the second exchange: it has its memory and its handle)
  cudaIpcMemHandle_t handle{};
  char whyNot[160] = {};  // when not ready
};

std::string describe(algo::CollType type, size_t count, DataType dtype) {
  return std::string(algo::collName(type)) + " of " + std::to_string(count) + " x " + dataTypeName(dtype);
}

// One call being enqueued step by step.
struct PeerCall {
  Operation op;
  cudaStream_t stream = nullptr;
  algo::peer::Plan plan;
  size_t next = 0;
  bool oneKernel = false;  // the whole call is one kernel (gpu/one_kernel_step.hpp)
  bool finished = false;
};

class PeerGroup {
 public:
  PeerGroup(HostComm& comm, int device) : comm_(comm), rank_(comm.rank()), n_(comm.size()), device_(device) {
    slotBytes_ = static_cast<size_t>(settings().gpuSlotBytes);
    oneShotBytes_ = static_cast<size_t>(settings().gpuOneShotBytes);
    oneKernelBytes_ = static_cast<size_t>(settings().gpuOneKernelMax);
  }
  ~PeerGroup();

  /// Collective: maps every peer's memory; `*why` empty when every rank did, else why not (the same everywhere).
  Status setUp(std::string* why);
  /// Plans `op` on `stream` into `call`; fails at once on a communicator that failed.
  Status begin(const Operation& op, cudaStream_t stream, PeerCall* call);
  /// Enqueues the call's next step (and, after its last, its end).
  Status enqueueStep(PeerCall& call);

 private:
  /// Rank `writer`'s word of the flag array at `at` (kArrivalsAt, kDoneAt) in rank `owner`'s memory.
  char* flagWord(int owner, size_t at, int writer) const { return base_[owner] + at + writer * sizeof(uint32_t); }
  char* slot(int rank, uint64_t parity) const { return base_[rank] + kHeaderBytes + parity * slotBytes_; }
  void* address(const Ref& ref, const Operation& op, uint64_t parity) const;
  Status prepareOwnMemory(SetupInfo* mine);
  /// Maps rank q's memory into base_[q].
  Status map(const SetupInfo& peer, int q);
  /// Collective: whether `mine` holds on every rank.
  Status allAgree(bool mine, bool* everyone, const char* what);
  Status exchange(const SetupInfo& mine, std::vector<SetupInfo>* all, const char* what);
  std::string refusal(const std::vector<SetupInfo>& all) const;
  /// Collective: turns the one-kernel calls off unless the ranks' kernels run at once.
  Status checkKernelsRunTogether(const std::vector<SetupInfo>& all);
  /// Microseconds a barrier takes as an empty one-kernel step, on the group's own stream.
  Status timeKernelBarriers(double* micros);
  /// The one-kernel step of `step`, or of the barrier alone for `step` null.
  OneKernelStep oneKernelStep(const Step* step, const Operation& op, uint64_t parity);
  Status launchOneKernel(const OneKernelStep& k, unsigned blocks, const Operation& op, cudaStream_t stream);
  Status barrier(cudaStream_t stream);
  Status runPhase(const Phase& phase, const Operation& op, uint64_t parity, cudaStream_t stream);
  /// Enqueues the whole call as one kernel.
  Status enqueueOneKernel(PeerCall& call);
  /// The call's end: follows it until it completes.
  Status track(const Operation& op, cudaStream_t stream);
  void watch();
  /// Satisfies every wait this rank's stream has enqueued (its own flags), so that a failed call's stream drains.
  void releaseWaits();
  /// Until `deadline`: whether every peer's done counter reached this rank's last call (they no longer read it).
  bool peersFinished(Clock::time_point deadline);

  HostComm& comm_;
  const int rank_;
  const int n_;
  const int device_;
  size_t slotBytes_ = 0;       // CHORUS_GPU_SLOT: each of a rank's two slots
  size_t oneShotBytes_ = 0;    // CHORUS_GPU_ONE_SHOT, for the plans' shapes
  size_t oneKernelBytes_ = 0;  // CHORUS_GPU_ONE_KERNEL, or 0 where the ranks' kernels do not run at once
  char* own_ = nullptr;
  std::vector<char*> base_;      // every rank's memory as mapped here (own_ at rank_)
  std::vector<bool> opened_;     // base_[q] came from cudaIpcOpenMemHandle
  cudaStream_t side_ = nullptr;  // the group's own stream: set-up checks, releases, teardown reads
  uint64_t steps_ = 0;           // steps run: step k uses slot k % 2
  uint32_t calls_ = 0;
  std::atomic<uint32_t> barriers_{0};
  uint32_t blocksMet_ = 0;  // the meeting counter's value once the kernels enqueued so far ran
  // The stream of the last call and its end: a call on another stream waits for it, since every call of the group
  // uses the same flags and slots in turn.
  cudaStream_t lastStream_ = nullptr;
  cudaEvent_t lastDone_ = nullptr;
  std::vector<CUstreamBatchMemOpParams> memOps_;
  std::vector<DeviceCopy> copies_, scaledCopies_;

  struct InFlight {
    cudaEvent_t done = nullptr;
    Clock::time_point enqueued;
    double timeoutSeconds = 0;
    algo::CollType type;  // what the call was, described only if it fails (no string per call)
    size_t count;
    DataType dtype;
  };
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<InFlight> inFlight_;
  std::vector<cudaEvent_t> spareEvents_;
  bool stopping_ = false;
  bool failed_ = false;  // under mutex_
  std::thread watchdog_;
};

Status PeerGroup::prepareOwnMemory(SetupInfo* mine) {
  if (!batchMemOp()) return invalidUsage("the CUDA driver has no cuStreamBatchMemOp");
  CHORUS_CUDA_TRY(cudaStreamCreateWithFlags(&side_, cudaStreamNonBlocking), "cudaStreamCreate");
  void* p = nullptr;
  CHORUS_CUDA_TRY(cudaMalloc(&p, kHeaderBytes + 2 * slotBytes_),
                  "cudaMalloc of " + std::to_string(kHeaderBytes + 2 * slotBytes_) + " bytes of peer memory");
  own_ = static_cast<char*>(p);
  // Zeroed flags by a copy, not cudaMemset: a memset is a kernel of CUDA's, loaded lazily (see loadKernels()).
  static const char zeros[kHeaderBytes] = {};
  CHORUS_CUDA_TRY(cudaMemcpyAsync(own_, zeros, kHeaderBytes, cudaMemcpyHostToDevice, side_), "cudaMemcpyAsync");
  // The stream memory operations the barriers use: a write and a wait that it satisfies.
  std::vector<CUstreamBatchMemOpParams> probe = {writeOp(own_ + kProbeAt, 1), waitOp(own_ + kProbeAt, 1)};
  CHORUS_TRY(runMemOps(side_, probe, "the stream memory operations' check"));
  CHORUS_CUDA_TRY(cudaStreamSynchronize(side_), "the stream memory operations' check");
  CHORUS_CUDA_TRY(cudaIpcGetMemHandle(&mine->handle, own_), "cudaIpcGetMemHandle");
  mine->address = reinterpret_cast<uintptr_t>(own_);
  return Status::ok();
}

Status PeerGroup::exchange(const SetupInfo& mine, std::vector<SetupInfo>* all, const char* what) {
  Operation gather;
  gather.type = algo::CollType::kAllGather;
  gather.send = &mine;
  gather.recv = all->data();
  gather.count = sizeof(SetupInfo);
  gather.dtype = DataType::kUint8;
  return comm_.execute(std::move(gather)).withContext(std::string("setting up the device path (") + what + ")");
}

// Why the ranks' calls cannot run over each other's device memory, from where they are; empty where they can.
std::string PeerGroup::refusal(const std::vector<SetupInfo>& all) const {
  for (const SetupInfo& info : all) {
    if (!info.ready) return info.whyNot;
    if (info.machine != all[rank_].machine) return "the ranks are on more than one host";
  }
  // Ranks of one process on one device share its hardware queues (CUDA_DEVICE_MAX_CONNECTIONS, 8 by default), and a
  // queue runs its streams' work in order: one rank's stream waiting at a barrier could hold back the very work of
  // another rank that would release it. (A hang of 4 such ranks was seen on an H200, 2026-11-26.)
  for (int a = 0; a < n_; ++a)
    for (int b = a + 1; b < n_; ++b)
      if (all[a].process == all[b].process && all[a].device == all[b].device) {
        return "ranks " + std::to_string(a) + " and " + std::to_string(b) + " are threads of one process on device " +
               std::to_string(all[a].device) + ", where one rank's waiting stream could hold back the other's";
      }
  return "";
}

Status PeerGroup::setUp(std::string* why) {
  DeviceScope onDevice(device_);
  // First where the ranks are, so that ranks refused the path allocate nothing: freeing device memory waits for the
  // device's other work, which for threads of one process may be a peer's stream held back until this rank's call.
  SetupInfo mine;
  mine.machine = std::hash<std::string>()(bootstrap::machineId());
  mine.process = bootstrap::processToken();
  mine.device = device_;
  mine.ready = 1;
  if (n_ > kMaxRanks) {
    mine.ready = 0;
    snprintf(mine.whyNot, sizeof(mine.whyNot), "more than %d ranks", kMaxRanks);
  }
  std::vector<SetupInfo> all(n_);
  CHORUS_TRY(exchange(mine, &all, "exchanging where the ranks are"));
  *why = refusal(all);
  if (!why->empty()) return Status::ok();

  if (Status st = prepareOwnMemory(&mine); !st.isOk()) {
    mine.ready = 0;
    snprintf(mine.whyNot, sizeof(mine.whyNot), "rank %d: %s", rank_, st.message().c_str());
  }
  CHORUS_TRY(exchange(mine, &all, "exchanging memory handles"));
  for (const SetupInfo& info : all) {
    if (!info.ready) {
      *why = info.whyNot;
      return Status::ok();
    }
  }
  // Map every peer's memory; whether each rank could is agreed on, so all ranks take the same path.
  base_.assign(n_, nullptr);
  base_[rank_] = own_;
  bool mapped = true;
  std::string failure;
  opened_.assign(n_, false);
  for (int q = 0; q < n_ && mapped; ++q) {
    if (q == rank_) continue;
    Status st = map(all[q], q);
    if (!st.isOk()) {
      (void)cudaGetLastError();  // a failed mapping is an answer here, not an error for the next CUDA call
      failure = st.message();
      mapped = false;
    }
  }
  bool everyone = false;
  CHORUS_TRY(allAgree(mapped, &everyone, "agreeing on the mappings"));
  if (!everyone) {
    *why = failure.empty() ? "a peer could not map every rank's device memory" : failure;
    return Status::ok();
  }
  CHORUS_TRY(checkKernelsRunTogether(all));
  watchdog_ = std::thread([this] { watch(); });
  return Status::ok();
}

// Ranks on GPUs of their own run their kernels at once. Processes sharing a GPU do only under MPS: without it the GPU
// runs them in turns of a time slice, and a kernel that waits for its peers inside it waits a slice per barrier
// (docs/gpu.md). So where processes share a device, the ranks time a few barriers of empty one-kernel
// steps and agree.
Status PeerGroup::checkKernelsRunTogether(const std::vector<SetupInfo>& all) {
  if (oneKernelBytes_ == 0) return Status::ok();
  bool shared = false;
  for (int a = 0; a < n_; ++a)
    for (int b = a + 1; b < n_; ++b) shared = shared || all[a].device == all[b].device;
  if (!shared) return Status::ok();
  constexpr double kTogetherMicros = 200;  // MPS: 5-20 µs; turns: milliseconds
  double micros = 0;
  CHORUS_TRY(timeKernelBarriers(&micros));
  bool everyone = false;
  CHORUS_TRY(allAgree(micros < kTogetherMicros, &everyone, "agreeing on one-kernel calls"));
  if (!everyone) oneKernelBytes_ = 0;
  CHORUS_INFO(kInit, "rank %d: ranks share device %d; a barrier inside a kernel took %.1f us here, so calls %s", rank_,
              device_, micros,
              everyone ? "run as one kernel up to CHORUS_GPU_ONE_KERNEL"
                       : "keep their barriers in stream memory operations (the ranks' kernels run in turns: is MPS "
                         "running?)");
  return Status::ok();
}

Status PeerGroup::timeKernelBarriers(double* micros) {
  constexpr int kTimed = 4;
  const Operation none;
  cudaEvent_t done = nullptr;
  CHORUS_CUDA_TRY(cudaEventCreateWithFlags(&done, cudaEventDisableTiming), "cudaEventCreate");
  // Enqueues `barriers` barriers and waits for them, until CHORUS_TIMEOUT; on a timeout or an abort the barriers'
  // waits are released, so the stream drains.
  auto run = [&](int barriers) -> Status {
    for (int i = 0; i < barriers; ++i) CHORUS_TRY(launchOneKernel(oneKernelStep(nullptr, none, 0), 1, none, side_));
    CHORUS_CUDA_TRY(cudaEventRecord(done, side_), "cudaEventRecord");
    Status st = waitForEvent(done, comm_.abortFlag(), "the set-up's barriers (every peer's arrival)");
    if (!st.isOk()) releaseWaits();
    return st;
  };
  Status st = run(1);  // waits for the peers to get here
  const Clock::time_point start = Clock::now();
  if (st.isOk()) st = run(kTimed);
  *micros = std::chrono::duration<double, std::micro>(Clock::now() - start).count() / kTimed;
  (void)cudaEventDestroy(done);
  return st;
}

Status PeerGroup::allAgree(bool mine, bool* everyone, const char* what) {
  int32_t in = mine ? 1 : 0, out = 0;
  Operation agree;
  agree.type = algo::CollType::kAllReduce;
  agree.send = &in;
  agree.recv = &out;
  agree.count = 1;
  agree.dtype = DataType::kInt32;
  agree.op = RedOp::min();
  CHORUS_TRY(comm_.execute(std::move(agree)).withContext(std::string("setting up the device path (") + what + ")"));
  *everyone = out != 0;
  return Status::ok();
}

Status PeerGroup::map(const SetupInfo& peer, int q) {
  if (peer.process != bootstrap::processToken()) {
    void* p = nullptr;
    CHORUS_CUDA_TRY(cudaIpcOpenMemHandle(&p, peer.handle, cudaIpcMemLazyEnablePeerAccess),
                    "cudaIpcOpenMemHandle of rank " + std::to_string(q) + "'s memory (device " +
                        std::to_string(peer.device) + ") on device " + std::to_string(device_));
    base_[q] = static_cast<char*>(p);
    opened_[q] = true;
    return Status::ok();
  }
  // A rank of this process (CUDA maps no handle in the process that made it): its pointer, through peer access
  // where it is on another device.
  if (peer.device != device_) {
    int can = 0;
    CHORUS_CUDA_TRY(cudaDeviceCanAccessPeer(&can, device_, peer.device), "cudaDeviceCanAccessPeer");
    if (!can) {
      return invalidUsage("device " + std::to_string(device_) + " has no peer access to device " +
                          std::to_string(peer.device));
    }
    const cudaError_t e = cudaDeviceEnablePeerAccess(peer.device, 0);
    if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) return cudaError(e, "cudaDeviceEnablePeerAccess");
    (void)cudaGetLastError();
  }
  base_[q] = reinterpret_cast<char*>(static_cast<uintptr_t>(peer.address));
  return Status::ok();
}

PeerGroup::~PeerGroup() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (watchdog_.joinable()) watchdog_.join();
  DeviceScope onDevice(device_);
  bool failed = failed_ || comm_.aborted();
  if (!inFlight_.empty()) {
    // Wait for this rank's calls; the watchdog is gone, so a failed communicator's waits are released here.
    if (failed) releaseWaits();
    const Clock::time_point deadline =
        Clock::now() +
        std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(inFlight_.back().timeoutSeconds));
    for (InFlight& f : inFlight_) {
      while (cudaEventQuery(f.done) == cudaErrorNotReady) {
        if (Clock::now() > deadline) {
          failed = true;
          releaseWaits();
        }
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      }
      (void)cudaEventDestroy(f.done);
    }
    inFlight_.clear();
  }
  for (cudaEvent_t e : spareEvents_) (void)cudaEventDestroy(e);
  // Peers may still read this rank's slots for their last call; their memory is freed only once they are done.
  const bool peersDone = failed || base_.empty() || peersFinished(Clock::now() + std::chrono::seconds(10));
  for (int q = 0; q < static_cast<int>(base_.size()); ++q)
    if (opened_[q]) (void)cudaIpcCloseMemHandle(base_[q]);
  if (own_ && peersDone) (void)cudaFree(own_);
  if (side_) (void)cudaStreamDestroy(side_);
  (void)cudaGetLastError();
}

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

// A communicator's state in HostComm::peerMemory(): its group, or none where its calls are staged.
struct PeerMemory {
  std::unique_ptr<PeerGroup> group;
};

}  // namespace

Status preparePeerMemory(HostComm& comm, const std::vector<Operation>& ops, bool* usable) {
  *usable = false;
  if (!settings().gpuPeerMemory) return Status::ok();
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

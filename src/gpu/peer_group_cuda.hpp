// The device path's peer-memory group, shared by its two files: setting it up (peer_group_setup_cuda.cc: memory,
// IPC handles, the checks every rank agrees on) and running calls on it (peer_group_cuda.cc: steps, barriers, the
// watchdog). Internal to those two files; the rest of chorus sees only gpu/peer_group.hpp.
#pragma once

#include <cuda.h>  // the driver's types; its functions are looked up at run time (the library links no libcuda)
#include <cuda_runtime.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gpu/device_kernels.hpp"
#include "gpu/one_kernel_step.hpp"
#include "gpu/peer_group.hpp"
#include "gpu/runtime.hpp"
#include "gpu/settings.hpp"

namespace chorus::gpu::peer_memory {

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
/// cuStreamBatchMemOp from the driver, or null where the driver has none.
BatchMemOpFn batchMemOp();
/// A stream memory operation that writes `value` at `at` (after a fence: what the stream wrote before is visible).
CUstreamBatchMemOpParams writeOp(const char* at, uint32_t value);
/// A stream memory operation that waits until the counter at `at` reached `value` (cyclically: counters may wrap).
CUstreamBatchMemOpParams waitOp(const char* at, uint32_t value);
/// Enqueues `ops` on `stream`; `what` names the step in the error.
Status runMemOps(cudaStream_t stream, std::vector<CUstreamBatchMemOpParams>& ops, const char* what);

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
    slotBytes_ = static_cast<size_t>(settings()[kSlot]);
    oneShotBytes_ = static_cast<size_t>(settings()[kOneShot]);
    oneKernelBytes_ = static_cast<size_t>(settings()[kOneKernel]);
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

}  // namespace chorus::gpu::peer_memory

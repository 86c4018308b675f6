// Setting a peer-memory group up and taking it down: each rank's memory and IPC handle, the exchanges and the
// checks every rank must agree on (gpu/peer_group_cuda.hpp).
#include <cstring>
#include <functional>

#include "bootstrap/host_id.hpp"
#include "core/deadline.hpp"
#include "core/log.hpp"
#include "gpu/one_kernel_fit.hpp"
#include "gpu/peer_group_cuda.hpp"

namespace chorus::gpu::peer_memory {

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

}  // namespace chorus::gpu::peer_memory

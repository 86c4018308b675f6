#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "chorus/request.hpp"
#include "gpu/peer_group.hpp"
#include "gpu/pinned_pool.hpp"
#include "gpu/runtime.hpp"
#include "gpu/staging.hpp"
#include "gpu/stream_calls.hpp"

namespace chorus::gpu {
namespace {

#define CHORUS_CUDA_TRY(call, what)                                 \
  do {                                                              \
    cudaError_t e_ = (call);                                        \
    if (e_ != cudaSuccess) return cudaError(e_, std::string(what)); \
  } while (0)

// Host functions run on CUDA's own thread and may call no CUDA function: they only wait and release.
void waitForCall(void* request) {
  auto* r = static_cast<Request*>(request);
  (void)r->wait();  // its outcome is the communicator's async error
  delete r;
}
void releaseStaging(void* buffer) { delete static_cast<std::shared_ptr<std::byte>*>(buffer); }

// Makes `waiter` wait for everything enqueued on `on` so far.
Status join(cudaStream_t waiter, cudaStream_t on) {
  cudaEvent_t e = nullptr;
  CHORUS_CUDA_TRY(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate");
  cudaError_t r = cudaEventRecord(e, on);
  if (r == cudaSuccess) r = cudaStreamWaitEvent(waiter, e, 0);
  (void)cudaEventDestroy(e);  // the wait keeps what it needs
  return r == cudaSuccess ? Status::ok() : cudaError(r, "joining a group's streams");
}

// A staged call between its two halves on the stream: its inputs copied to staging, its host call submitted.
struct StagedCall {
  Request call;
  StagingPlan plan;
  std::shared_ptr<std::byte> staging;
  cudaStream_t stream = nullptr;
};
Status stageIn(HostComm& comm, const std::vector<Operation>& ops, cudaStream_t stream, StagedCall* out);
Status stageOut(StagedCall& staged, bool streamWaits);

// A call captured into a CUDA graph would replay with what was fixed when it was enqueued: its barrier counts and
// slots on the GPU path (racing its peers from the second replay on), its host-side call when staged. So it is
// refused, before anything is enqueued, rather than run wrong.
Status refuseGraphCapture(const std::vector<Operation>& ops) {
  for (const Operation& op : ops) {
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(static_cast<cudaStream_t>(op.stream), &capture) != cudaSuccess) {
      (void)cudaGetLastError();
      continue;
    }
    if (capture != cudaStreamCaptureStatusNone) {
      return invalidUsage(std::string(algo::collName(op.type)) +
                          " on a stream being captured into a CUDA graph: chorus does not support graph capture of "
                          "its calls yet; make the call outside the capture");
    }
  }
  return Status::ok();
}

}  // namespace

Status enqueueOnStreams(const std::vector<std::pair<HostComm*, std::vector<Operation>>>& calls) {
  for (const auto& call : calls) CHORUS_TRY(refuseGraphCapture(call.second));
  // Each communicator's operations run on their first one's stream, joined with the others' streams around them.
  std::vector<CommCalls> onMain;
  std::vector<std::vector<cudaStream_t>> others(calls.size());
  for (size_t i = 0; i < calls.size(); ++i) {
    const std::vector<Operation>& ops = calls[i].second;
    auto main = static_cast<cudaStream_t>(ops.front().stream);
    for (const Operation& op : ops) {
      auto s = static_cast<cudaStream_t>(op.stream);
      if (s != main && std::find(others[i].begin(), others[i].end(), s) == others[i].end()) others[i].push_back(s);
    }
    for (cudaStream_t s : others[i]) CHORUS_TRY(join(main, s));
    onMain.push_back({calls[i].first, ops, main});
  }
  std::vector<bool> onPeerMemory;
  CHORUS_TRY(runOnPeerMemory(onMain, &onPeerMemory));
  // The staged calls. Where another rank of the communicator is in this process, the calling thread waits for the
  // call rather than the stream: a stream held back until a rank of this process makes its call could hold that
  // rank's thread inside CUDA (freeing memory, for one, waits for the device's work), and neither would move. Ranks
  // as threads of one process on an H200 hung at their first staged call while their streams waited (2026-11-27).
  // Every call of the group is submitted before any is waited for: one thread may drive several ranks.
  std::vector<StagedCall> staged(calls.size());
  std::vector<bool> callerWaits(calls.size(), false);
  for (size_t i = 0; i < calls.size(); ++i) {
    if (!onPeerMemory[i]) {
      CHORUS_TRY(stageIn(*calls[i].first, calls[i].second, static_cast<cudaStream_t>(onMain[i].stream), &staged[i]));
      callerWaits[i] = calls[i].first->sharesProcess();
    }
  }
  Status failed;
  for (size_t i = 0; i < calls.size(); ++i) {
    if (callerWaits[i]) {
      Status st = staged[i].call.wait();
      if (failed.isOk()) failed = st;
    }
  }
  CHORUS_TRY(failed);
  for (size_t i = 0; i < calls.size(); ++i) {
    if (!onPeerMemory[i]) CHORUS_TRY(stageOut(staged[i], !callerWaits[i]));
    for (cudaStream_t s : others[i]) CHORUS_TRY(join(s, static_cast<cudaStream_t>(onMain[i].stream)));
  }
  return Status::ok();
}

Status enqueueOnStream(HostComm& comm, const std::vector<Operation>& ops) { return enqueueOnStreams({{&comm, ops}}); }

namespace {

Status stageIn(HostComm& comm, const std::vector<Operation>& ops, cudaStream_t stream, StagedCall* out) {
  out->stream = stream;
  out->plan = planStaging(ops, comm.rank(), comm.size());
  CHORUS_TRY(stagingFor(currentDevice(), stream, out->plan.bytes, &out->staging));
  for (const StagedCopy& c : out->plan.in) {
    CHORUS_CUDA_TRY(cudaMemcpyAsync(out->staging.get() + c.offset, c.device, c.bytes, cudaMemcpyDefault, stream),
                    "cudaMemcpyAsync of the inputs to staging");
  }
  cudaEvent_t inputsReady = nullptr;
  CHORUS_CUDA_TRY(cudaEventCreateWithFlags(&inputsReady, cudaEventDisableTiming), "cudaEventCreate");
  cudaError_t recorded = cudaEventRecord(inputsReady, stream);
  if (recorded != cudaSuccess) {
    (void)cudaEventDestroy(inputsReady);
    return cudaError(recorded, "cudaEventRecord");
  }
  const std::atomic<bool>* aborted = comm.abortFlag();
  out->call = comm.submitOnStream(out->plan.rebase(out->staging.get()),
                                  [inputsReady, aborted, staging = out->staging](std::vector<Operation>* staged) {
                                    Status st = waitForEvent(inputsReady, aborted, "the call");
                                    (void)cudaEventDestroy(inputsReady);
                                    if (st.isOk()) readStagedScalars(staged);
                                    return st;
                                  });
  return Status::ok();
}

// The results copied back once the call is done: the stream waits for it where `streamWaits`, else the caller has.
Status stageOut(StagedCall& staged, bool streamWaits) {
  if (streamWaits) {
    auto* waiting = new Request(staged.call);
    cudaError_t e = cudaLaunchHostFunc(staged.stream, waitForCall, waiting);
    if (e != cudaSuccess) {
      delete waiting;
      return cudaError(e, "cudaLaunchHostFunc");
    }
  }
  for (const StagedCopy& c : staged.plan.out) {
    CHORUS_CUDA_TRY(cudaMemcpyAsync(const_cast<void*>(c.device), staged.staging.get() + c.offset, c.bytes,
                                    cudaMemcpyDefault, staged.stream),
                    "cudaMemcpyAsync of the results from staging");
  }
  auto* held = new std::shared_ptr<std::byte>(std::move(staged.staging));
  cudaError_t e = cudaLaunchHostFunc(staged.stream, releaseStaging, held);
  if (e != cudaSuccess) {
    delete held;
    return cudaError(e, "cudaLaunchHostFunc");
  }
  return Status::ok();
}

}  // namespace
}  // namespace chorus::gpu

// Calls on device memory, run by processes that share the machine's GPUs (several ranks per GPU included): every
// collective, type and op against the same reference as the host tests, stream ordering, groups, nonblocking init,
// a call mixing host and device buffers, a killed rank. Without a CUDA device each test skips with the reason.
//
// CUDA must not be initialized in the parent before it forks the ranks, so the parent asks a forked child whether a
// device exists.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "chorus/stream.hpp"
#include "gpu/runtime.hpp"
#include "nccl.h"
#include "tests/support/collective_case.hpp"
#include "tests/support/process_ranks.hpp"

namespace chorus::testing {
namespace {

int deviceCountInChild() {
  pid_t pid = fork();
  if (pid == 0) {
    int n = 0;
    _exit(cudaGetDeviceCount(&n) == cudaSuccess ? std::min(n, 100) : 0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 0;
}

int devices() {
  static const int n = deviceCountInChild();
  return n;
}

// A host-to-device copy that has landed when it returns. cudaMemcpy alone returns once a pageable source is staged,
// and the ranks' streams are non-blocking: they do not wait for the legacy stream's copy.
cudaError_t toDevice(void* dst, const void* src, size_t bytes) {
  cudaError_t e = cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice);
  return e == cudaSuccess ? cudaDeviceSynchronize() : e;
}

#define SKIP_WITHOUT_GPU() \
  if (devices() == 0) GTEST_SKIP() << "no CUDA device on this machine (cudaGetDeviceCount found none)"

// The case's buffers in device memory for the call, copied back once the stream ran it.
class DeviceHome final : public BufferHome {
 public:
  explicit DeviceHome(cudaStream_t stream) : stream_(stream) {}
  ~DeviceHome() override {
    for (auto& [host, copy] : copies_) cudaFree(copy.device);
  }
  void* address(std::vector<unsigned char>& buffer, unsigned char* p) override {
    auto it = copies_.find(&buffer);
    if (it == copies_.end()) {
      Copy c;
      if (cudaMalloc(&c.device, buffer.size()) != cudaSuccess ||
          toDevice(c.device, buffer.data(), buffer.size()) != cudaSuccess) {
        ADD_FAILURE() << "cudaMalloc/cudaMemcpy failed";
      }
      it = copies_.emplace(&buffer, c).first;
    }
    return static_cast<unsigned char*>(it->second.device) + (p - buffer.data());
  }
  std::string finish() override {
    cudaError_t e = cudaStreamSynchronize(stream_);
    if (e != cudaSuccess) return std::string("cudaStreamSynchronize: ") + cudaGetErrorString(e);
    for (auto& [host, copy] : copies_) {
      e = cudaMemcpy(host->data(), copy.device, host->size(), cudaMemcpyDeviceToHost);
      if (e != cudaSuccess) return std::string("cudaMemcpy back: ") + cudaGetErrorString(e);
    }
    return "";
  }

 private:
  struct Copy {
    void* device = nullptr;
  };
  cudaStream_t stream_;
  std::map<std::vector<unsigned char>*, Copy> copies_;
};

// Each rank on GPU rank % devices, on a stream of its own.
struct RankStream {
  cudaStream_t stream = nullptr;
  explicit RankStream(int rank) {
    cudaSetDevice(rank % devices());
    cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  }
  ~RankStream() { cudaStreamDestroy(stream); }
};

std::string runCases(Communicator& comm, const std::vector<Case>& cases) {
  RankStream rs(comm.rank());
  StreamScope scope(rs.stream);
  for (const Case& c : cases) {
    DeviceHome home(rs.stream);
    std::string failed = runCase(comm, c, &home);
    if (!failed.empty()) return failed;
    Status st = comm.asyncError();
    if (!st.isOk()) return describe(c, comm.size()) + ": async error " + st.message();
  }
  return "";
}

std::vector<Case> everyCase(int nranks) {
  std::vector<Case> cases;
  for (algo::CollType coll : testedCollectives())
    for (DataType type : allDataTypes())
      for (const RedOp& op : usesOp(coll) ? allOps() : std::vector<RedOp>{RedOp::sum()})
        for (bool inPlace : {false, true}) {
          if (inPlace && !supportsInPlace(coll)) continue;
          // Small, and past the engine's 256 KiB bounce buffer.
          for (size_t count : {size_t{7}, size_t{100000}}) {
            Case c;
            c.coll = coll;
            c.type = type;
            c.op = op;
            c.inPlace = inPlace;
            c.count = count;
            c.root = nranks - 1;
            cases.push_back(c);
          }
        }
  return cases;
}

void expectAllPassed(const std::vector<ProcessResult>& results) {
  for (size_t r = 0; r < results.size(); ++r)
    EXPECT_EQ(results[r].exitCode, 0) << "rank " << r << ": " << results[r].message;
}

// Runs `body` in a forked child over `n` ranks made in that process (communicators of one process, for threads or
// one thread driving several ranks); "" on success or what failed.
void expectLocalRanksPass(int n, const std::function<std::string(std::vector<std::unique_ptr<Communicator>>&)>& body,
                          double deadlineSeconds) {
  expectAllPassed(runProcesses(
      1, "",
      [&](Communicator&) -> std::string {
        std::vector<std::unique_ptr<Communicator>> comms;
        if (Status st = Communicator::createLocal(n, &comms); !st.isOk()) return "createLocal: " + st.message();
        return body(comms);
      },
      deadlineSeconds));
}

class DeviceCollectives : public ::testing::TestWithParam<int> {};

TEST_P(DeviceCollectives, EveryCollectiveTypeAndOpMatchesTheReference) {
  SKIP_WITHOUT_GPU();
  const int nranks = GetParam();
  expectAllPassed(runProcesses(
      nranks, "", [&](Communicator& comm) { return runCases(comm, everyCase(nranks)); }, 600));
}

INSTANTIATE_TEST_SUITE_P(Ranks, DeviceCollectives, ::testing::Values(1, 2, 3, 4),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return std::to_string(info.param) + "ranks";
                         });

// The call returns while its stream is still held back by earlier work, and the result is there once the stream ran.
TEST(DeviceStreams, CallReturnsAtOnceAndCompletesInStreamOrder) {
  SKIP_WITHOUT_GPU();
  expectAllPassed(runProcesses(2, "", [](Communicator& comm) -> std::string {
    RankStream rs(comm.rank());
    StreamScope scope(rs.stream);
    const size_t n = 1 << 20;
    float* buf = nullptr;
    if (cudaMalloc(&buf, n * sizeof(float)) != cudaSuccess) return "cudaMalloc failed";
    std::vector<float> host(n, 1.0f + comm.rank());
    toDevice(buf, host.data(), n * sizeof(float));
    static std::atomic<bool> release{false};
    cudaLaunchHostFunc(
        rs.stream,
        [](void*) {
          while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        },
        nullptr);
    Status st = comm.allReduce(buf, buf, n, DataType::kFloat32, RedOp::sum());
    if (!st.isOk()) return "allReduce: " + st.message();
    if (cudaStreamQuery(rs.stream) != cudaErrorNotReady) return "the stream was not held back";
    release = true;
    // The stream's later work sees the result: a copy enqueued after the call (from pageable memory, it returns
    // once done, so only after the release).
    std::vector<float> out(n, 0.0f);
    cudaMemcpyAsync(out.data(), buf, n * sizeof(float), cudaMemcpyDeviceToHost, rs.stream);
    if (cudaStreamSynchronize(rs.stream) != cudaSuccess) return "cudaStreamSynchronize failed";
    for (size_t i = 0; i < n; ++i)
      if (out[i] != 3.0f) return "element " + std::to_string(i) + " is " + std::to_string(out[i]);
    cudaFree(buf);
    return "";
  }));
}

TEST(DeviceStreams, HostAndDeviceBuffersInOneCallAreAnInvalidArgument) {
  SKIP_WITHOUT_GPU();
  expectAllPassed(runProcesses(1, "", [](Communicator& comm) -> std::string {
    RankStream rs(0);
    float* device = nullptr;
    cudaMalloc(&device, 64 * sizeof(float));
    std::vector<float> host(64);
    Status st = comm.allReduce(host.data(), device, 64, DataType::kFloat32, RedOp::sum());
    cudaFree(device);
    if (st.code() != ErrorCode::kInvalidArgument) return "expected an invalid argument, got: " + st.message();
    if (st.message().find("host memory") == std::string::npos) return "the message does not say why: " + st.message();
    return "";
  }));
}

// A group of several AllReduces on device memory, on two streams: both streams see every result.
TEST(DeviceStreams, GroupOnTwoStreamsCompletesOnBoth) {
  SKIP_WITHOUT_GPU();
  expectAllPassed(runProcesses(3, "", [](Communicator& comm) -> std::string {
    RankStream a(comm.rank()), b(comm.rank());
    const size_t n = 4096;
    std::vector<float*> bufs(4);
    for (size_t k = 0; k < bufs.size(); ++k) {
      cudaMalloc(&bufs[k], n * sizeof(float));
      std::vector<float> host(n, static_cast<float>(k + comm.rank()));
      toDevice(bufs[k], host.data(), n * sizeof(float));
    }
    Status st = groupStart();
    for (size_t k = 0; k < bufs.size() && st.isOk(); ++k) {
      StreamScope scope(k % 2 ? b.stream : a.stream);
      st = comm.allReduce(bufs[k], bufs[k], n, DataType::kFloat32, RedOp::sum());
    }
    Status end = groupEnd();
    if (!st.isOk() || !end.isOk()) return "group: " + st.message() + end.message();
    for (size_t k = 0; k < bufs.size(); ++k) {
      std::vector<float> out(n);
      // Read on the other stream than the call's own: the group joined both.
      cudaMemcpyAsync(out.data(), bufs[k], n * sizeof(float), cudaMemcpyDeviceToHost, k % 2 ? a.stream : b.stream);
      cudaStreamSynchronize(k % 2 ? a.stream : b.stream);
      const float want = 3.0f * k + 0 + 1 + 2;
      if (out[0] != want || out[n - 1] != want) return "buffer " + std::to_string(k) + ": " + std::to_string(out[0]);
      cudaFree(bufs[k]);
    }
    return "";
  }));
}

// Ranks that are threads of one process (communicators made in the process, each thread on device rank % devices):
// every collective at sizes that make the staging buffers grow, so staging is allocated while a peer's stream waits
// for its call. On one device these ranks are staged; their set-up must allocate nothing it then frees, since freeing
// device memory waits for the device's other work, here a peer's stream that waits for this rank's call. (So the
// test, like a program with NCCL, frees its buffers only once no rank has a call in flight.)
TEST(DeviceStreams, RanksAsThreadsOfOneProcess) {
  SKIP_WITHOUT_GPU();
  expectLocalRanksPass(
      3,
      [](std::vector<std::unique_ptr<Communicator>>& comms) -> std::string {
        std::vector<std::string> failed(comms.size());
        std::vector<std::vector<std::unique_ptr<DeviceHome>>> homes(comms.size());
        std::vector<std::unique_ptr<RankStream>> streams;
        for (size_t r = 0; r < comms.size(); ++r) streams.push_back(std::make_unique<RankStream>(static_cast<int>(r)));
        std::vector<std::thread> threads;
        for (size_t r = 0; r < comms.size(); ++r) {
          threads.emplace_back([&, r] {
            cudaSetDevice(static_cast<int>(r) % devices());
            StreamScope scope(streams[r]->stream);
            std::vector<Case> cases;
            for (algo::CollType coll : testedCollectives())
              for (size_t count : {size_t{7}, size_t{100000}, size_t{1} << 20}) {
                Case c;
                c.coll = coll;
                c.count = count;
                c.root = 1;
                cases.push_back(c);
              }
            for (const Case& c : cases) {
              homes[r].push_back(std::make_unique<DeviceHome>(streams[r]->stream));
              failed[r] = runCase(*comms[r], c, homes[r].back().get());
              if (!failed[r].empty()) return;
            }
          });
        }
        for (std::thread& t : threads) t.join();
        for (size_t r = 0; r < failed.size(); ++r)
          if (!failed[r].empty()) return "rank " + std::to_string(r) + ": " + failed[r];
        return "";
      },
      120);
}

// One thread drives two ranks of one communicator in groups (nccl-tests' -g): the ranks' first call sets up both,
// and a set-up is a collective among the ranks, so the thread must not wait for one before it starts the other.
TEST(DeviceStreams, OneThreadDrivingTwoRanksInGroups) {
  SKIP_WITHOUT_GPU();
  expectLocalRanksPass(
      2,
      [](std::vector<std::unique_ptr<Communicator>>& comms) -> std::string {
        std::vector<std::unique_ptr<RankStream>> streams;
        std::vector<float*> bufs(2, nullptr);
        for (int r = 0; r < 2; ++r) streams.push_back(std::make_unique<RankStream>(r));  // sets rank r's device
        for (size_t n : {size_t{1000}, size_t{1} << 20}) {
          for (int r = 0; r < 2; ++r) {
            cudaSetDevice(r % devices());
            cudaMalloc(&bufs[r], n * sizeof(float));
            std::vector<float> host(n, static_cast<float>(r + 1));
            toDevice(bufs[r], host.data(), n * sizeof(float));
          }
          Status st = groupStart();
          for (int r = 0; r < 2 && st.isOk(); ++r) {
            cudaSetDevice(r % devices());
            StreamScope scope(streams[r]->stream);
            st = comms[r]->allReduce(bufs[r], bufs[r], n, DataType::kFloat32, RedOp::sum());
          }
          Status end = groupEnd();
          if (!st.isOk() || !end.isOk()) return "group: " + st.message() + end.message();
          for (int r = 0; r < 2; ++r) {
            cudaSetDevice(r % devices());
            std::vector<float> out(n);
            cudaMemcpyAsync(out.data(), bufs[r], n * sizeof(float), cudaMemcpyDeviceToHost, streams[r]->stream);
            cudaStreamSynchronize(streams[r]->stream);
            cudaFree(bufs[r]);
            if (out[0] != 3.0f || out[n - 1] != 3.0f)
              return "rank " + std::to_string(r) + ", " + std::to_string(n) + " floats: " + std::to_string(out[0]);
          }
        }
        return "";
      },
      120);
}

// Consecutive calls on two streams in turn: each waits for the one before (they share the communicator's flags and
// slots), though nothing orders the two streams.
TEST(DeviceStreams, CallsAlternatingBetweenStreamsRunInCallOrder) {
  SKIP_WITHOUT_GPU();
  expectAllPassed(runProcesses(2, "", [](Communicator& comm) -> std::string {
    RankStream a(comm.rank()), b(comm.rank());
    const size_t n = 1000;  // small: one kernel a call where the ranks' kernels run at once
    const int calls = 40;
    float* bufs = nullptr;
    cudaMalloc(&bufs, calls * n * sizeof(float));
    std::vector<float> host(calls * n);
    for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>(i / n + 10 * comm.rank());
    toDevice(bufs, host.data(), host.size() * sizeof(float));
    for (int k = 0; k < calls; ++k) {
      StreamScope scope(k % 2 ? b.stream : a.stream);
      float* buf = bufs + k * n;
      if (Status st = comm.allReduce(buf, buf, n, DataType::kFloat32, RedOp::sum()); !st.isOk()) return st.message();
    }
    cudaStreamSynchronize(a.stream);
    cudaStreamSynchronize(b.stream);
    cudaMemcpy(host.data(), bufs, host.size() * sizeof(float), cudaMemcpyDeviceToHost);
    cudaFree(bufs);
    for (int k = 0; k < calls; ++k)
      for (size_t i = 0; i < n; ++i)
        if (host[k * n + i] != 2.0f * k + 10)
          return "call " + std::to_string(k) + ": " + std::to_string(host[k * n + i]);
    return "";
  }));
}

// A call on a stream being captured into a CUDA graph is refused, and the capture stays valid.
TEST(DeviceStreams, CallDuringGraphCaptureIsRefused) {
  SKIP_WITHOUT_GPU();
  expectAllPassed(runProcesses(2, "", [](Communicator& comm) -> std::string {
    RankStream rs(comm.rank());
    StreamScope scope(rs.stream);
    float* buf = nullptr;
    cudaMalloc(&buf, 64 * sizeof(float));
    cudaStreamBeginCapture(rs.stream, cudaStreamCaptureModeThreadLocal);
    Status st = comm.allReduce(buf, buf, 64, DataType::kFloat32, RedOp::sum());
    cudaGraph_t graph = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(rs.stream, &graph);
    if (graph) cudaGraphDestroy(graph);
    // Outside the capture the same call runs.
    Status after = comm.allReduce(buf, buf, 64, DataType::kFloat32, RedOp::sum());
    cudaStreamSynchronize(rs.stream);
    cudaFree(buf);
    if (st.code() != ErrorCode::kInvalidUsage || st.message().find("CUDA graph") == std::string::npos)
      return "expected an invalid usage naming the CUDA graph, got: " + st.message();
    if (ended != cudaSuccess) return std::string("the capture was invalidated: ") + cudaGetErrorString(ended);
    if (!after.isOk()) return "the call after the capture: " + after.message();
    return "";
  }));
}

// NCCL's nonblocking communicator as PyTorch drives it: init returns ncclInProgress, ncclCommGetAsyncError says
// when it is done, then calls on device memory run on the stream.
TEST(DeviceStreams, NonblockingCommunicatorThroughTheCApi) {
  SKIP_WITHOUT_GPU();
  const int nranks = 2;
  ncclUniqueId id;
  // The id comes from a forked helper: the parent must stay free of CUDA (and its root thread serves the ranks).
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  std::vector<pid_t> pids;
  for (int r = 0; r < nranks; ++r) {
    pid_t pid = fork();
    if (pid == 0) {
      cudaSetDevice(r % devices());
      ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
      config.blocking = 0;
      ncclComm_t comm = nullptr;
      ncclResult_t res = ncclCommInitRankConfig(&comm, nranks, id, r, &config);
      if (res != ncclInProgress && res != ncclSuccess) _exit(10);
      ncclResult_t state = ncclInProgress;
      const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      while (state == ncclInProgress && std::chrono::steady_clock::now() < end) {
        if (ncclCommGetAsyncError(comm, &state) != ncclSuccess) _exit(11);
      }
      if (state != ncclSuccess) _exit(12);
      int device = -2;
      if (ncclCommCuDevice(comm, &device) != ncclSuccess || device != r % devices()) _exit(13);
      cudaStream_t s;
      cudaStreamCreate(&s);
      int* buf = nullptr;
      cudaMalloc(&buf, 1000 * sizeof(int));
      std::vector<int> host(1000, r + 1);
      cudaMemcpy(buf, host.data(), host.size() * sizeof(int), cudaMemcpyHostToDevice);
      res = ncclAllReduce(buf, buf, 1000, ncclInt32, ncclSum, comm, s);
      if (res != ncclSuccess && res != ncclInProgress) _exit(14);
      if (cudaStreamSynchronize(s) != cudaSuccess) _exit(15);
      if (ncclCommGetAsyncError(comm, &state) != ncclSuccess || state != ncclSuccess) _exit(16);
      cudaMemcpy(host.data(), buf, host.size() * sizeof(int), cudaMemcpyDeviceToHost);
      if (host[0] != 3 || host[999] != 3) _exit(17);
      ncclCommDestroy(comm);
      _exit(0);
    }
    pids.push_back(pid);
  }
  for (int r = 0; r < nranks; ++r) {
    int status = 0;
    waitpid(pids[r], &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "rank " << r << " exit " << WEXITSTATUS(status);
  }
}

// A rank killed before a call on device memory: the survivor's call is enqueued, its stream still completes, and
// the communicator's async error names the failure within the deadline.
TEST(DeviceStreams, KilledRankEndsTheSurvivorsCallWithAnError) {
  SKIP_WITHOUT_GPU();
  setenv("CHORUS_TIMEOUT", "20", 1);
  auto results = runProcesses(
      2, "",
      [](Communicator& comm) -> std::string {
        if (comm.rank() == 1) kill(getpid(), SIGKILL);
        RankStream rs(0);
        StreamScope scope(rs.stream);
        float* buf = nullptr;
        cudaMalloc(&buf, (1 << 20) * sizeof(float));
        Status st = comm.allReduce(buf, buf, 1 << 20, DataType::kFloat32, RedOp::sum());
        if (!st.isOk()) return "";  // refused at once: fine too
        if (cudaStreamSynchronize(rs.stream) != cudaSuccess) return "the stream failed";
        st = comm.asyncError();
        return st.isOk() ? "no error although the peer was killed" : "";
      },
      120);
  unsetenv("CHORUS_TIMEOUT");
  EXPECT_EQ(results[1].exitCode, 128 + SIGKILL);
  EXPECT_EQ(results[0].exitCode, 0) << results[0].message;
  EXPECT_LT(results[0].secondsToExit, 60);
}

}  // namespace
}  // namespace chorus::testing

#include "perf/nccl_backend.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "capi/nccl_comm.hpp"
#include "comm/comm_access.hpp"
#include "core/settings.hpp"
#include "gpu/runtime.hpp"
#include "perf/data.hpp"

namespace chorus::perf {

void ncclFailure(ncclResult_t r, int line) {
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  const std::string last = ncclGetLastError(nullptr);
  fprintf(stderr, "%s: pid %d: Test NCCL failure nccl_backend.cc:%d '%s' / %s\n", host, getpid(), line,
          ncclGetErrorString(r), last.c_str());
  fflush(stdout);
  _exit(last.find("timed out") != std::string::npos ? 4 : 3);
}

namespace {

class NcclBackend final : public Backend {
 public:
  NcclBackend(const ncclUniqueId& id, int nranks, int firstRank, int perThread, bool deviceMemory) : nranks_(nranks) {
    comms_.resize(perThread);
    for (int g = 0; g < perThread; ++g) ranks_.push_back(firstRank + g);
    if (deviceMemory) {
      const int count = gpu::deviceCount();
      for (int g = 0; g < perThread; ++g) {
        devices_.push_back(ranks_[g] % count);
        cudaCheck(gpu::setDevice(devices_[g]));
        streams_.push_back(nullptr);
        cudaCheck(gpu::createStream(&streams_[g]));
      }
    }
    CHORUS_NCCL_CHECK(ncclGroupStart());
    for (int g = 0; g < perThread; ++g) {
      if (deviceMemory) cudaCheck(gpu::setDevice(devices_[g]));  // the device each communicator is for
      CHORUS_NCCL_CHECK(ncclCommInitRank(&comms_[g], nranks, id, ranks_[g]));
    }
    CHORUS_NCCL_CHECK(ncclGroupEnd());
  }
  ~NcclBackend() override {
    for (ncclComm_t c : comms_) ncclCommDestroy(c);
    for (void* s : streams_) gpu::destroyStream(s);
  }

  int device(size_t g) const override { return devices_.empty() ? -1 : devices_[g]; }
  char* allocateDevice(size_t g, size_t bytes) override {
    void* p = nullptr;
    cudaCheck(gpu::setDevice(devices_[g]));
    cudaCheck(gpu::allocateDevice(bytes, &p));
    return static_cast<char*>(p);
  }
  void freeDevice(char* p) override { (void)gpu::freeDevice(p); }
  char* allocateRegistered(size_t bytes) override {
    void* p = nullptr;
    return gpu::available() || ncclMemAlloc(&p, bytes) != ncclSuccess ? nullptr : static_cast<char*>(p);
  }
  void freeRegistered(char* p) override { ncclMemFree(p); }
  void copy(void* dst, const void* src, size_t bytes) override { cudaCheck(gpu::copyMemory(dst, src, bytes)); }
  void synchronize() override {
    for (size_t g = 0; g < streams_.size(); ++g) {
      cudaCheck(gpu::setDevice(devices_[g]));
      cudaCheck(gpu::synchronizeStream(streams_[g]));
    }
  }

  int nranks() const override { return nranks_; }
  const std::vector<int>& localRanks() const override { return ranks_; }
  // The transports this rank's connections use ("chorus shm", "chorus loopback+tcp"), as chosen at init.
  int ncclVersion() const override {
    int version = 0;
    return ncclGetVersion(&version) == ncclSuccess ? version : 0;
  }

  std::string describe() const override {
    std::string names = comms_.empty() || !comms_[0]->comm ? "" : CommAccess::impl(*comms_[0]->comm).transportNames();
    return "chorus " + (names.empty() ? std::string("self") : names);
  }

  double combine(double value, Combine how) override {
    const ncclRedOp_t op = how == Combine::kMin ? ncclMin : how == Combine::kMax ? ncclMax : ncclSum;
    std::vector<double> vals(comms_.size(), value);
    CHORUS_NCCL_CHECK(ncclGroupStart());
    for (size_t g = 0; g < comms_.size(); ++g) {
      CHORUS_NCCL_CHECK(ncclAllReduce(&vals[g], &vals[g], 1, ncclFloat64, op, comms_[g], nullptr));
    }
    CHORUS_NCCL_CHECK(ncclGroupEnd());
    return vals[0];
  }

  std::vector<std::string> gatherLines(const std::vector<std::string>& mine) override {
    constexpr size_t kLine = 192;
    std::vector<std::vector<char>> in(comms_.size(), std::vector<char>(kLine));
    std::vector<std::vector<char>> out(comms_.size(), std::vector<char>(kLine * nranks_));
    for (size_t g = 0; g < comms_.size(); ++g) snprintf(in[g].data(), kLine, "%s", mine[g].c_str());
    CHORUS_NCCL_CHECK(ncclGroupStart());
    for (size_t g = 0; g < comms_.size(); ++g) {
      CHORUS_NCCL_CHECK(ncclAllGather(in[g].data(), out[g].data(), kLine, ncclInt8, comms_[g], nullptr));
    }
    CHORUS_NCCL_CHECK(ncclGroupEnd());
    std::vector<std::string> lines;
    for (int r = 0; r < nranks_; ++r) lines.emplace_back(out[0].data() + r * kLine);
    return lines;
  }

  void launch(const Collective& coll, const std::vector<Pointers>& p, size_t count, ncclDataType_t type, int op,
              int root) override {
    // Reduction ops are made per communicator only for PreMulSum; any other call passes its op as it is, so a process
    // with one communicator makes the call alone, as the MPI baselines' loop does.
    const auto plainOp = static_cast<ncclRedOp_t>(op < 0 ? ncclSum : op);
    if (op == kMulSum) {
      ops_.resize(comms_.size());  // a member: no allocation inside the timed loop
      for (size_t g = 0; g < comms_.size(); ++g) {
        char scalar[8];
        storeValue(scalar, 0, type, mulSumScalar(ranks_[g]));
        CHORUS_NCCL_CHECK(ncclRedOpCreatePreMulSum(&ops_[g], scalar, type, ncclScalarHostImmediate, comms_[g]));
      }
    }
    if (comms_.size() > 1) CHORUS_NCCL_CHECK(ncclGroupStart());
    for (size_t g = 0; g < comms_.size(); ++g) {
      if (!devices_.empty() && comms_.size() > 1) cudaCheck(gpu::setDevice(devices_[g]));
      CHORUS_NCCL_CHECK(call(coll.id, p[g], count, type, op == kMulSum ? ops_[g] : plainOp, root, comms_[g], ranks_[g],
                             streams_.empty() ? nullptr : static_cast<cudaStream_t>(streams_[g])));
    }
    if (comms_.size() > 1) CHORUS_NCCL_CHECK(ncclGroupEnd());
    if (op == kMulSum) {
      for (size_t g = 0; g < comms_.size(); ++g) CHORUS_NCCL_CHECK(ncclRedOpDestroy(ops_[g], comms_[g]));
    }
  }

  void aggregateStart() override { CHORUS_NCCL_CHECK(ncclGroupStart()); }
  void aggregateEnd() override { CHORUS_NCCL_CHECK(ncclGroupEnd()); }

 private:
  ncclResult_t call(CollId id, const Pointers& p, size_t count, ncclDataType_t type, ncclRedOp_t op, int root,
                    ncclComm_t comm, int rank, cudaStream_t stream) {
    switch (id) {
      case CollId::kAllReduce:
        return ncclAllReduce(p.send, p.recv, count, type, op, comm, stream);
      case CollId::kReduceScatter:
        return ncclReduceScatter(p.send, p.recv, count, type, op, comm, stream);
      case CollId::kAllGather:
        return ncclAllGather(p.send, p.recv, count, type, comm, stream);
      case CollId::kAlltoAll:
        return ncclAlltoAll(p.send, p.recv, count, type, comm, stream);
      case CollId::kBroadcast:
        return ncclBroadcast(p.send, p.recv, count, type, root, comm, stream);
      case CollId::kReduce:
        return ncclReduce(p.send, p.recv, count, type, op, root, comm, stream);
      case CollId::kGather:
        return ncclGather(p.send, p.recv, count, type, root, comm, stream);
      case CollId::kScatter:
        return ncclScatter(p.send, p.recv, count, type, root, comm, stream);
      case CollId::kSendRecv: {
        // A ring: send to rank+1, receive from rank-1, in one group.
        ncclResult_t res = ncclGroupStart();
        if (res == ncclSuccess) res = ncclSend(p.send, count, type, (rank + 1) % nranks_, comm, stream);
        if (res == ncclSuccess) res = ncclRecv(p.recv, count, type, (rank - 1 + nranks_) % nranks_, comm, stream);
        ncclResult_t end = ncclGroupEnd();
        return res != ncclSuccess ? res : end;
      }
    }
    return ncclInternalError;
  }

  // A CUDA failure ends the process as an NCCL one does.
  static void cudaCheck(const Status& st) {
    if (st.isOk()) return;
    fprintf(stderr, "chorus perf: %s\n", st.message().c_str());
    _exit(3);
  }

  int nranks_;
  std::vector<int> ranks_;
  std::vector<int> devices_;    // per local rank, with device memory
  std::vector<void*> streams_;  // the same
  std::vector<ncclComm_t> comms_;
  std::vector<ncclRedOp_t> ops_;
};

}  // namespace

std::unique_ptr<Backend> makeNcclBackend(const ncclUniqueId& id, int nranks, int firstRank, int perThread,
                                         bool deviceMemory) {
  return std::make_unique<NcclBackend>(id, nranks, firstRank, perThread, deviceMemory);
}

}  // namespace chorus::perf

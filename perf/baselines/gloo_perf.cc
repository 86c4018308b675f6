// The perf sweep on Gloo (Debian's 2022 libgloo, tcp transport, the function-style API that PyTorch's
// ProcessGroupGloo uses, in its default mode): start N copies with any launcher that sets Open MPI's, Slurm's or
// torchrun's rank variables, e.g. `mpirun -np 2 gloo_perf all_reduce -b 8 -e 64M -f 2`. Ranks meet through a
// FileStore under /tmp named after the job id.
#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/alltoall.h>
#include <gloo/broadcast.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

#include "perf/backend.hpp"
#include "perf/options.hpp"

namespace chorus::perf {
namespace {

std::string env(const char* name) {
  const char* v = getenv(name);
  return v ? v : "";
}

// Rank, size and a job id from the launcher's environment.
bool launchInfo(int* rank, int* size, std::string* job) {
  const char* pairs[][3] = {{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_MCA_ess_base_jobid"},
                            {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_JOB_ID"},
                            {"RANK", "WORLD_SIZE", "TORCHELASTIC_RUN_ID"}};
  for (auto& p : pairs) {
    if (env(p[0]).empty() || env(p[1]).empty()) continue;
    *rank = atoi(env(p[0]).c_str());
    *size = atoi(env(p[1]).c_str());
    *job = env(p[2]).empty() ? "default" : env(p[2]);
    return true;
  }
  return false;
}

template <typename T>
using ReduceFn = void (*)(void*, const void*, const void*, size_t);

template <typename T>
ReduceFn<T> reduction(int op) {
  switch (op) {
    case ncclSum:
      return &gloo::sum<T>;
    case ncclProd:
      return &gloo::product<T>;
    case ncclMax:
      return &gloo::max<T>;
    case ncclMin:
      return &gloo::min<T>;
    default:
      return nullptr;
  }
}

class GlooBackend final : public Backend {
 public:
  GlooBackend(int rank, int size, const std::string& job) : rank_(rank), size_(size), ranks_{rank} {
    const std::string dir = "/tmp/chorus-gloo/" + job;
    std::filesystem::create_directories(dir);
    gloo::transport::tcp::attr attr;
    attr.hostname = "127.0.0.1";
    device_ = gloo::transport::tcp::CreateDevice(attr);
    gloo::rendezvous::FileStore files(dir);
    gloo::rendezvous::PrefixStore store("perf", files);
    context_ = std::make_shared<gloo::rendezvous::Context>(rank, size);
    context_->connectFullMesh(store, device_);
    dir_ = dir;
  }
  ~GlooBackend() override {
    if (rank_ == 0) std::filesystem::remove_all(dir_);
  }

  int nranks() const override { return size_; }
  const std::vector<int>& localRanks() const override { return ranks_; }
  std::string describe() const override { return "Gloo tcp"; }

  double combine(double value, Combine how) override {
    double v = value;
    gloo::AllreduceOptions o(context_);
    o.setOutput(&v, 1);
    o.setReduceFunction(how == Combine::kMin   ? reduction<double>(ncclMin)
                        : how == Combine::kMax ? reduction<double>(ncclMax)
                                               : reduction<double>(ncclSum));
    o.setTag(nextTag());
    gloo::allreduce(o);
    return v;
  }

  std::vector<std::string> gatherLines(const std::vector<std::string>& mine) override {
    constexpr size_t kLine = 192;
    std::vector<char> in(kLine), out(kLine * size_);
    snprintf(in.data(), kLine, "%s", mine[0].c_str());
    gloo::AllgatherOptions o(context_);
    o.setInput(in.data(), kLine);
    o.setOutput(out.data(), out.size());
    o.setTag(nextTag());
    gloo::allgather(o);
    std::vector<std::string> lines;
    for (int r = 0; r < size_; ++r) lines.emplace_back(out.data() + r * kLine);
    return lines;
  }

  bool supports(const Collective& coll, ncclDataType_t type, int op) const override {
    if (type != ncclFloat32 && type != ncclFloat64 && type != ncclInt32 && type != ncclInt64) return false;
    return !coll.usesOp || (op >= ncclSum && op <= ncclMin);
  }

  void launch(const Collective& coll, const std::vector<Pointers>& ptrs, size_t count, ncclDataType_t type, int op,
              int root) override {
    if (count == 0) return;  // Gloo divides by the element count; an empty call is a no-op anyway
    switch (type) {
      case ncclFloat64:
        return run<double>(coll, ptrs[0], count, op, root);
      case ncclInt32:
        return run<int32_t>(coll, ptrs[0], count, op, root);
      case ncclInt64:
        return run<int64_t>(coll, ptrs[0], count, op, root);
      default:
        return run<float>(coll, ptrs[0], count, op, root);
    }
  }

 private:
  template <typename T>
  void run(const Collective& coll, const Pointers& p, size_t count, int op, int root) {
    T* send = reinterpret_cast<T*>(const_cast<char*>(p.send));
    T* recv = reinterpret_cast<T*>(p.recv);
    const bool inPlace = p.send == p.recv;
    switch (coll.id) {
      case CollId::kAllReduce: {
        gloo::AllreduceOptions o(context_);
        if (!inPlace) o.setInput(send, count);
        o.setOutput(recv, count);
        o.setReduceFunction(reduction<T>(op));
        o.setTag(nextTag());
        gloo::allreduce(o);
        break;
      }
      case CollId::kAllGather: {
        gloo::AllgatherOptions o(context_);
        if (send != recv + count * rank_) o.setInput(send, count);  // without input: in place
        o.setOutput(recv, count * size_);
        o.setTag(nextTag());
        gloo::allgather(o);
        break;
      }
      case CollId::kAlltoAll: {
        gloo::AlltoallOptions o(context_);
        o.setInput(send, count * size_);
        o.setOutput(recv, count * size_);
        o.setTag(nextTag());
        gloo::alltoall(o);
        break;
      }
      case CollId::kBroadcast: {
        gloo::BroadcastOptions o(context_);
        if (rank_ == root && !inPlace) o.setInput(send, count);
        o.setOutput(recv, count);
        o.setRoot(root);
        o.setTag(nextTag());
        gloo::broadcast(o);
        break;
      }
      default:
        fprintf(stderr, "gloo_perf: %s is not measured on Gloo\n", coll.name);
        exit(6);
    }
  }

  uint32_t nextTag() { return tag_++; }

  int rank_, size_;
  std::vector<int> ranks_;
  std::shared_ptr<gloo::transport::Device> device_;
  std::shared_ptr<gloo::rendezvous::Context> context_;
  std::string dir_;
  uint32_t tag_ = 0;
};

}  // namespace
}  // namespace chorus::perf

int main(int argc, char** argv) {
  using namespace chorus::perf;
  const Collective* coll = argc > 1 ? findCollective(argv[1]) : nullptr;
  const bool supported = coll && (coll->id == CollId::kAllReduce || coll->id == CollId::kAllGather ||
                                  coll->id == CollId::kAlltoAll || coll->id == CollId::kBroadcast);
  if (!supported) {
    fprintf(stderr, "usage: mpirun -np N %s <all_reduce|all_gather|alltoall|broadcast> [nccl-tests flags]\n", argv[0]);
    return 6;
  }
  int rank = 0, size = 1;
  std::string job;
  if (!launchInfo(&rank, &size, &job)) {
    fprintf(stderr, "gloo_perf: start it with mpirun, srun or torchrun (no rank in the environment)\n");
    return 6;
  }
  Options options;
  int code = parseOptions(argc - 1, argv + 1, &options);
  if (code >= 0) return code;
  setvbuf(stdout, nullptr, _IOLBF, 0);
  try {
    GlooBackend backend(rank, size, job);
    if (rank == 0) {
      printPreamble("# baseline: Gloo (Debian libgloo 0.0~git20220518), tcp, function API, default (async) mode",
                    (std::string("gloo_perf ") + coll->name).c_str(), options);
    }
    return runSweep(options, *coll, backend, rank == 0);
  } catch (const std::exception& e) {
    fprintf(stderr, "gloo_perf: rank %d: %s\n", rank, e.what());
    return 3;
  }
}

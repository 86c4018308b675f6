// The perf driver shared by every *_perf tool: ranks from threads (-t/-g), from a launcher's environment
// (mpirun, srun, torchrun) or from --nprocs; the nccl-tests sweep, timing, data check and table. Cross-rank
// bookkeeping (barriers, time averaging, error counts) goes through the communicator under test itself.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/launcher.hpp"
#include "core/settings.hpp"
#include "perf/collective.hpp"
#include "perf/data.hpp"
#include "perf/options.hpp"

namespace chorus::perf {
namespace {

struct World {
  int procRank = 0;
  int procCount = 1;
  ncclUniqueId id{};
};

struct RankState {
  ncclComm_t comm = nullptr;
  int rank = 0;
  char* send = nullptr;
  char* recv = nullptr;
  char* expected = nullptr;
};

const char* kTypeNames[] = {"int8",   "uint8", "int32", "uint32", "int64",
                            "uint64", "half",  "float", "double", "bfloat16"};
const ncclDataType_t kTypes[] = {ncclInt8,   ncclUint8,   ncclInt32,   ncclUint32,  ncclInt64,
                                 ncclUint64, ncclFloat16, ncclFloat32, ncclFloat64, ncclBfloat16};
const char* kOpNames[] = {"sum", "prod", "max", "min", "avg", "mulsum"};
const int kOps[] = {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg, kMulSum};

[[noreturn]] void die(ncclResult_t r, int line) {
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  fprintf(stderr, "%s: pid %d: Test NCCL failure driver.cc:%d '%s' / %s\n", host, getpid(), line, ncclGetErrorString(r),
          ncclGetLastError(nullptr));
  fflush(stdout);
  _exit(r == ncclRemoteError || std::string(ncclGetLastError(nullptr)).find("timed out") != std::string::npos ? 4 : 3);
}
#define NCCLCHECK(cmd)                        \
  do {                                        \
    ncclResult_t r_ = (cmd);                  \
    if (r_ != ncclSuccess) die(r_, __LINE__); \
  } while (0)

// Fits a number into `width` characters: 2 decimals, then 1, then 0, then exponent notation.
std::string fit(double v, int width) {
  char buf[64];
  for (int decimals = 2; decimals >= 0; --decimals) {
    snprintf(buf, sizeof(buf), "%*.*f", width, decimals, v);
    if (static_cast<int>(strlen(buf)) <= width) return buf;
  }
  snprintf(buf, sizeof(buf), "%*.0e", width, v);
  return buf;
}

class Runner {
 public:
  Runner(const Options& o, const Collective& c, const World& w, int thread)
      : opt_(o), coll_(c), world_(w), thread_(thread) {}

  // Sums (or mins/maxes) a value over every rank of the communicator.
  double reduceAll(double v, ncclRedOp_t op) {
    std::vector<double> vals(ranks_.size(), v);
    NCCLCHECK(ncclGroupStart());
    for (size_t g = 0; g < ranks_.size(); ++g) {
      NCCLCHECK(ncclAllReduce(&vals[g], &vals[g], 1, ncclFloat64, op, ranks_[g].comm, nullptr));
    }
    NCCLCHECK(ncclGroupEnd());
    return vals[0];
  }
  void barrier() { (void)reduceAll(0, ncclSum); }
  bool printer() const { return world_.procRank == 0 && thread_ == 0; }

  int run() {
    const int perProc = opt_.nThreads * opt_.nGpus;
    nranks_ = world_.procCount * perProc;
    ranks_.resize(opt_.nGpus);
    NCCLCHECK(ncclGroupStart());
    for (int g = 0; g < opt_.nGpus; ++g) {
      ranks_[g].rank = (world_.procRank * opt_.nThreads + thread_) * opt_.nGpus + g;
      NCCLCHECK(ncclCommInitRank(&ranks_[g].comm, nranks_, world_.id, ranks_[g].rank));
    }
    NCCLCHECK(ncclGroupEnd());
    printDevices();

    // Buffers big enough for the largest size of any type.
    size_t maxElems = 0, maxRecv = 0;
    for (ncclDataType_t t : kTypes) {
      Counts c = coll_.counts(opt_.maxBytes, nranks_, typeSize(t));
      maxElems = std::max({maxElems, c.sendCount * typeSize(t), c.recvCount * typeSize(t)});
      maxRecv = std::max(maxRecv, c.recvCount * typeSize(t));
    }
    const size_t pad = 8 * static_cast<size_t>(opt_.unalign) + 64;
    for (auto& r : ranks_) {
      void* p = nullptr;
      NCCLCHECK(ncclMemAlloc(&p, maxElems + pad));
      r.send = static_cast<char*>(p);
      NCCLCHECK(ncclMemAlloc(&p, maxElems + pad));
      r.recv = static_cast<char*>(p);
      NCCLCHECK(ncclMemAlloc(&p, maxRecv + pad));
      r.expected = static_cast<char*>(p);
      memset(r.send, 0, maxElems + pad);
      memset(r.recv, 0, maxElems + pad);
    }

    std::vector<int> types, ops, roots;
    for (int i = 0; i < 10; ++i)
      if (opt_.datatype == "all" || opt_.datatype == kTypeNames[i]) types.push_back(i);
    if (types.empty()) {
      if (printer()) printf("# Invalid datatype '%s', using float\n", opt_.datatype.c_str());
      types.push_back(7);
    }
    if (coll_.usesOp) {
      for (int i = 0; i < 6; ++i)
        if (opt_.op == "all" || opt_.op == kOpNames[i]) ops.push_back(i);
      if (ops.empty()) {
        if (printer()) printf("# Invalid op '%s', using sum\n", opt_.op.c_str());
        ops.push_back(0);
      }
    } else {
      ops.push_back(-1);
    }
    if (coll_.usesRoot && opt_.root == -1) {
      for (int r = 0; r < nranks_; ++r) roots.push_back(r);
    } else {
      roots.push_back(coll_.usesRoot ? opt_.root : -1);
    }
    if (coll_.usesRoot && (opt_.root >= nranks_ || opt_.root < -1)) {
      if (printer()) fprintf(stderr, "invalid root %d for %d ranks\n", opt_.root, nranks_);
      return 6;
    }

    printHeader();
    for (int cycle = 0; opt_.runCycles == 0 || cycle < opt_.runCycles; ++cycle) {
      for (int t : types)
        for (int o : ops)
          for (int root : roots) sweep(t, o, root);
    }
    double avgBw = cells_ ? bwSum_ / cells_ : 0;
    double wrongCells = reduceAll(static_cast<double>(wrongCells_), ncclSum);
    if (printer()) {
      printf("# Out of bounds values : %.0f %s\n", wrongCells, wrongCells == 0 ? "OK" : "FAILED");
      printf("# Avg bus bandwidth    : %g \n", avgBw);
      printf("#\n# Collective test concluded: %s_perf\n#\n\n", coll_.name);
      fflush(stdout);
    }
    barrier();
    for (auto& r : ranks_) {
      NCCLCHECK(ncclCommDestroy(r.comm));
      ncclMemFree(r.send);
      ncclMemFree(r.recv);
      ncclMemFree(r.expected);
    }
    return wrongCells == 0 ? 0 : 7;
  }

 private:
  void printDevices() {
    char host[256] = {0};
    gethostname(host, sizeof(host) - 1);
    if (char* dot = strchr(host, '.')) *dot = 0;
    constexpr size_t kLine = 160;
    std::vector<std::vector<char>> all(ranks_.size(), std::vector<char>(kLine * nranks_));
    std::vector<std::vector<char>> mine(ranks_.size(), std::vector<char>(kLine));
    for (size_t g = 0; g < ranks_.size(); ++g) {
      snprintf(mine[g].data(), kLine, "#  Rank %2d Group  0 Pid %6d on %10s device %2d [host memory] %s",
               ranks_[g].rank, getpid(), host, -1,
               settings().transport.empty() ? "auto" : settings().transport.c_str());
    }
    NCCLCHECK(ncclGroupStart());
    for (size_t g = 0; g < ranks_.size(); ++g) {
      NCCLCHECK(ncclAllGather(mine[g].data(), all[g].data(), kLine, ncclInt8, ranks_[g].comm, nullptr));
    }
    NCCLCHECK(ncclGroupEnd());
    if (!printer()) return;
    printf("#\n# Using devices\n");
    for (int r = 0; r < nranks_; ++r) printf("%s\n", all[0].data() + r * kLine);
    printf("#\n");
  }

  void printHeader() {
    if (!printer()) return;
    const char* timeName = opt_.reportCpuTime ? "cputime" : "time";
    printf("#\n");
    printf("# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n", "", "", "",
           "", "");
    printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s%s\n", "size", "count", "type", "redop",
           "root", timeName, "algbw", "busbw", "#wrong", timeName, "algbw", "busbw", "#wrong",
           opt_.timestamps ? "  timestamp" : "");
    printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n", "(B)", "(elements)", "", "", "",
           "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
    fflush(stdout);
  }

  struct Pointers {
    const char* send;
    char* recv;
  };
  Pointers pointers(const RankState& r, bool inPlace, const Counts& c, size_t e) const {
    const size_t shift = static_cast<size_t>(opt_.unalign) * e;
    if (!inPlace) return {r.send + shift, r.recv + shift};
    char* base = r.recv + shift;
    const size_t offset = c.paramCount * static_cast<size_t>(r.rank) * e;
    switch (coll_.inPlace) {
      case InPlace::kSendInsideRecv:
        return {base + offset, base};
      case InPlace::kRecvInsideSend:
        return {base, base + offset};
      default:
        return {base, base};
    }
  }

  void launchAll(int typeIndex, int opIndex, int root, const Counts& c, bool inPlace) {
    const ncclDataType_t type = kTypes[typeIndex];
    const size_t e = typeSize(type);
    const int op = opIndex < 0 ? ncclSum : kOps[opIndex];
    std::vector<ncclRedOp_t> ops(ranks_.size(), static_cast<ncclRedOp_t>(op));
    if (op == kMulSum) {
      for (size_t g = 0; g < ranks_.size(); ++g) {
        char scalar[8];
        storeValue(scalar, 0, type, mulSumScalar(ranks_[g].rank));
        NCCLCHECK(ncclRedOpCreatePreMulSum(&ops[g], scalar, type, ncclScalarHostImmediate, ranks_[g].comm));
      }
    }
    if (ranks_.size() > 1) NCCLCHECK(ncclGroupStart());
    for (size_t g = 0; g < ranks_.size(); ++g) {
      Pointers p = pointers(ranks_[g], inPlace, c, e);
      NCCLCHECK(coll_.launch(p.send, p.recv, c.paramCount, type, ops[g], root < 0 ? 0 : root, ranks_[g].comm,
                             ranks_[g].rank, nranks_));
    }
    if (ranks_.size() > 1) NCCLCHECK(ncclGroupEnd());
    if (op == kMulSum) {
      for (size_t g = 0; g < ranks_.size(); ++g) NCCLCHECK(ncclRedOpDestroy(ops[g], ranks_[g].comm));
    }
  }

  // Fills inputs and expected results; returns nothing. Recv regions start zeroed.
  void prepare(int typeIndex, int opIndex, int root, const Counts& c, bool inPlace, uint64_t seed) {
    const ncclDataType_t type = kTypes[typeIndex];
    const size_t e = typeSize(type);
    for (auto& r : ranks_) {
      Pointers p = pointers(r, inPlace, c, e);
      memset(r.recv, 0, std::max(c.sendCount, c.recvCount) * e + 8 * static_cast<size_t>(opt_.unalign));
      FillArgs a{r.rank,
                 nranks_,
                 root < 0 ? 0 : root,
                 opIndex < 0 ? -1 : kOps[opIndex],
                 c.paramCount,
                 type,
                 seed,
                 const_cast<char*>(p.send),
                 r.expected};
      if (!coll_.fill(a)) memcpy(r.expected, p.recv, c.recvCount * e);
    }
  }

  size_t verify(int typeIndex, const Counts& c, bool inPlace) {
    const ncclDataType_t type = kTypes[typeIndex];
    size_t wrong = 0;
    for (auto& r : ranks_) {
      Pointers p = pointers(r, inPlace, c, typeSize(type));
      wrong += countMismatches(p.recv, r.expected, c.recvCount, type);
    }
    return wrong;
  }

  // Times one half of a row; returns time in microseconds and the wrong count (-1 when unchecked).
  void measure(int typeIndex, int opIndex, int root, const Counts& c, bool inPlace, double* us, double* wrong) {
    const bool check = opt_.check > 0 && (!inPlace || coll_.checksInPlace);
    if (opt_.check > 0) prepare(typeIndex, opIndex, root, c, inPlace, 99);
    launchAll(typeIndex, opIndex, root, c, inPlace);  // untimed
    barrier();
    auto start = std::chrono::steady_clock::now();
    for (int it = 0; it < opt_.iters; ++it) {
      if (opt_.aggIters > 1) NCCLCHECK(ncclGroupStart());
      for (int a = 0; a < opt_.aggIters; ++a) launchAll(typeIndex, opIndex, root, c, inPlace);
      if (opt_.aggIters > 1) NCCLCHECK(ncclGroupEnd());
      if (opt_.blocking == 1) barrier();
    }
    double local = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() /
                   (static_cast<double>(opt_.iters) * opt_.aggIters);
    switch (opt_.average) {
      case 0:
        *us = local;
        break;
      case 2:
        *us = reduceAll(local, ncclMin);
        break;
      case 3:
        *us = reduceAll(local, ncclMax);
        break;
      default:
        *us = reduceAll(local, ncclSum) / nranks_;
        break;
    }
    *wrong = -1;
    if (!check) return;
    double total = 0;
    for (int k = 0; k < opt_.check; ++k) {
      prepare(typeIndex, opIndex, root, c, inPlace, seed_++);
      launchAll(typeIndex, opIndex, root, c, inPlace);
      total = reduceAll(static_cast<double>(verify(typeIndex, c, inPlace)), ncclSum);
      if (total > 0) break;
    }
    *wrong = total;
    if (total > 0) ++wrongCells_;
  }

  void sweep(int typeIndex, int opIndex, int root) {
    const size_t e = typeSize(kTypes[typeIndex]);
    // Warm-up: every size of a doubling sweep, out of place.
    for (size_t size = opt_.minBytes; size <= opt_.maxBytes; size = size ? size * 2 : 1) {
      Counts c = coll_.counts(size, nranks_, e);
      for (int w = 0; w < opt_.warmupIters; ++w) launchAll(typeIndex, opIndex, root, c, false);
      if (size == opt_.maxBytes || size == 0) break;
    }
    for (size_t size = opt_.minBytes; size <= opt_.maxBytes;) {
      Counts c = coll_.counts(size, nranks_, e);
      const size_t bytes = std::max(c.sendCount, c.recvCount) * e;
      std::string row;
      char head[128];
      snprintf(head, sizeof(head), "%12zu  %12zu  %8s  %6s  %6d", bytes, c.paramCount, kTypeNames[typeIndex],
               opIndex < 0 ? "none" : kOpNames[opIndex], root);
      row = head;
      for (bool inPlace : {false, true}) {
        double us = 0, wrong = 0;
        measure(typeIndex, opIndex, root, c, inPlace, &us, &wrong);
        double algbw = us > 0 ? static_cast<double>(bytes) / us / 1e3 : 0;
        double busbw = algbw * coll_.busFactor(nranks_);
        bwSum_ += busbw;
        ++cells_;
        char half[128];
        char wrongText[16];
        if (wrong < 0)
          snprintf(wrongText, sizeof(wrongText), "%6s", "N/A");
        else
          snprintf(wrongText, sizeof(wrongText), "%6g", wrong);
        snprintf(half, sizeof(half), "  %s  %s  %s  %s", fit(us, 7).c_str(), fit(algbw, 6).c_str(),
                 fit(busbw, 6).c_str(), wrongText);
        row += half;
      }
      if (opt_.timestamps) {
        char ts[64];
        time_t now = time(nullptr);
        strftime(ts, sizeof(ts), "  %Y-%m-%d %H:%M:%S", localtime(&now));
        row += ts;
      }
      if (printer()) {
        printf("%s\n", row.c_str());
        fflush(stdout);
      }
      if (opt_.stepFactor > 1) {
        size = size ? size * opt_.stepFactor : 1;
      } else {
        if (opt_.stepBytes == 0) break;
        size += opt_.stepBytes;
      }
    }
  }

  const Options& opt_;
  const Collective& coll_;
  const World& world_;
  int thread_;
  int nranks_ = 1;
  std::vector<RankState> ranks_;
  uint64_t seed_ = 1000;
  double bwSum_ = 0;
  int cells_ = 0;
  int wrongCells_ = 0;
};

int runProcess(const Options& o, const Collective& coll, const World& world, const char* program) {
  if (world.procRank == 0) {
    int version = 0;
    ncclGetVersion(&version);
    printf("# chorus perf %s nccl-headers=%d nccl-library=%d\n", "0.1.0", NCCL_VERSION_CODE, version);
    printf("# Collective test starting: %s\n", program);
    printf(
        "# nThread %d nGpus %d minBytes %zu maxBytes %zu step: %zu(%s) warmup iters: %d iters: %d agg iters: %d "
        "validation: %d graph: 0 unalign: %d\n",
        o.nThreads, o.nGpus, o.minBytes, o.maxBytes, o.stepFactor > 1 ? o.stepFactor : o.stepBytes,
        o.stepFactor > 1 ? "factor" : "bytes", o.warmupIters, o.iters, o.aggIters, o.check, o.unalign);
    if (o.blocking) printf("# Blocking Enabled: wait for completion and barrier after each collective \n");
    for (const auto& flag : o.ignored) printf("# %s has no effect on host memory and is ignored\n", flag.c_str());
    fflush(stdout);
  }
  std::vector<int> codes(o.nThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 1; t < o.nThreads; ++t) {
    threads.emplace_back([&, t] { codes[t] = Runner(o, coll, world, t).run(); });
  }
  codes[0] = Runner(o, coll, world, 0).run();
  for (auto& t : threads) t.join();
  int worst = 0;
  for (int c : codes) worst = std::max(worst, c);
  return worst;
}

// --nprocs N: the parent makes the id (and runs the rendezvous root), forks N ranks and waits for them.
int launchLocal(const Options& o, const Collective& coll, const char* program) {
  World world;
  NCCLCHECK(ncclGetUniqueId(&world.id));
  world.procCount = o.nprocs;
  fflush(stdout);
  std::vector<pid_t> children;
  for (int i = 0; i < o.nprocs; ++i) {
    pid_t pid = fork();
    if (pid < 0) {
      perror("fork");
      return 2;
    }
    if (pid == 0) {
      world.procRank = i;
      int code = runProcess(o, coll, world, program);
      fflush(stdout);
      _exit(code);
    }
    children.push_back(pid);
  }
  // Reap children as they end (in any order): a dead rank must not linger as a zombie, which its peers would
  // still see as alive.
  int worst = 0;
  for (size_t left = children.size(); left > 0; --left) {
    int status = 0;
    pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0) break;
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    size_t rank = std::find(children.begin(), children.end(), pid) - children.begin();
    if (code != 0) fprintf(stderr, "%s: rank process %zu exited with code %d\n", program, rank, code);
    worst = std::max(worst, code);
  }
  return worst;
}

}  // namespace

int runPerfTool(int argc, char** argv, const Collective& coll) {
  Options o;
  int code = parseOptions(argc, argv, &o);
  if (code >= 0) return code;
  setvbuf(stdout, nullptr, _IOLBF, 0);
  if (o.timeout > 0) {
    setenv("CHORUS_TIMEOUT", std::to_string(o.timeout).c_str(), 1);
    reloadSettings();
  }
  const char* program = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
  bootstrap::LaunchInfo launch;
  if (bootstrap::detectLauncher(&launch) && launch.size > 1) {
    if (o.nprocs > 0) {
      fprintf(stderr, "%s: --nprocs cannot be combined with a launcher (%s)\n", program, launch.launcher.c_str());
      return 6;
    }
    World world;
    world.procRank = launch.rank;
    world.procCount = launch.size;
    chorus::UniqueId id;
    Status st = bootstrap::launchUniqueId(launch, &id);
    if (!st.isOk()) {
      fprintf(stderr, "%s: %s\n", program, st.message().c_str());
      return 3;
    }
    memcpy(world.id.internal, id.bytes.data(), sizeof(world.id.internal));
    int result = runProcess(o, coll, world, program);
    bootstrap::removeRendezvousFile(launch);
    return result;
  }
  if (o.nprocs > 1) return launchLocal(o, coll, program);
  World world;
  NCCLCHECK(ncclGetUniqueId(&world.id));
  return runProcess(o, coll, world, program);
}

}  // namespace chorus::perf

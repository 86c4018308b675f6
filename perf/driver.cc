// The perf driver shared by every *_perf tool: ranks from threads (-t/-g), from a launcher's environment
// (mpirun, srun, torchrun) or from --nprocs; the nccl-tests sweep, timing, data check and table. Cross-rank
// bookkeeping (barriers, time averaging, error counts) goes through the communicator under test itself.
#include <signal.h>
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

#include "bootstrap/id_handoff.hpp"
#include "bootstrap/launcher.hpp"
#include "core/settings.hpp"
#include "gpu/runtime.hpp"
#include "perf/backend.hpp"
#include "perf/collective.hpp"
#include "perf/nccl_backend.hpp"
#include "perf/options.hpp"
#include "tools/version_flag.hpp"

namespace chorus::perf {
namespace {

struct World {
  int procRank = 0;
  int procCount = 1;
  ncclUniqueId id{};
};

int runProcess(const Options& o, const Collective& coll, const World& world, const char* program) {
  if (world.procRank == 0) {
    int version = 0;
    ncclGetVersion(&version);
    char first[160];
    snprintf(first, sizeof(first), "# chorus perf %s nccl-headers=%d nccl-library=%d", chorusGetVersion(),
             NCCL_VERSION_CODE, version);
    printPreamble(first, program, o);
  }
  const int nranks = world.procCount * o.nThreads * o.nGpus;
  // Decided in each rank's process: CUDA must not start before the ranks are forked.
  const bool deviceMemory = o.hostMemory == 0 || (o.hostMemory < 0 && gpu::available());
  if (deviceMemory && !gpu::available()) {
    fprintf(stderr, "--host_memory 0: no CUDA device here (or chorus was built without CUDA)\n");
    return 2;
  }
  auto runThread = [&](int t) {
    auto backend =
        makeNcclBackend(world.id, nranks, (world.procRank * o.nThreads + t) * o.nGpus, o.nGpus, deviceMemory);
    return runSweep(o, coll, *backend, world.procRank == 0 && t == 0);
  };
  std::vector<int> codes(o.nThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 1; t < o.nThreads; ++t) threads.emplace_back([&, t] { codes[t] = runThread(t); });
  codes[0] = runThread(0);
  for (auto& t : threads) t.join();
  int worst = 0;
  for (int c : codes) worst = std::max(worst, c);
  return worst;
}

// --nprocs N: the parent forks N ranks, then makes the id (and runs the rendezvous root), hands it to them and
// waits for them.
int launchLocal(const Options& o, const Collective& coll, const char* program) {
  World world;
  world.procCount = o.nprocs;
  bootstrap::IdHandoff handoff;
  if (Status st = handoff.open(); !st.isOk()) {
    fprintf(stderr, "%s: %s\n", program, st.message().c_str());
    return 2;
  }
  fflush(stdout);
  std::vector<pid_t> children;
  for (int i = 0; i < o.nprocs; ++i) {
    pid_t pid = fork();
    if (pid < 0) {
      perror("fork");
      break;  // the children forked so far learn that no id comes, and end
    }
    if (pid == 0) {
      static_assert(sizeof(world.id) == sizeof(UniqueId));
      UniqueId id;
      if (Status st = handoff.receive(&id); !st.isOk()) {
        fprintf(stderr, "%s: rank %d: %s\n", program, i, st.message().c_str());
        _exit(2);
      }
      memcpy(&world.id, id.bytes.data(), sizeof(world.id));
      world.procRank = i;
      int code = runProcess(o, coll, world, program);
      fflush(stdout);
      _exit(code);
    }
    children.push_back(pid);
  }
  // Every rank is forked: now the id, and with it the root's thread.
  auto ncclId = [&](UniqueId* id) -> Status {
    if (children.size() < static_cast<size_t>(o.nprocs)) return systemError("fork failed");
    if (ncclGetUniqueId(&world.id) != ncclSuccess) return systemError(ncclGetLastError(nullptr));
    memcpy(id->bytes.data(), &world.id, sizeof(world.id));
    return Status::ok();
  };
  int worst = 0;
  if (Status st = handoff.handOver(ncclId, o.nprocs); !st.isOk()) {
    fprintf(stderr, "%s: could not start the ranks: %s\n", program, st.message().c_str());
    worst = 2;
  }
  // Reap children as they end (in any order): a dead rank must not linger as a zombie, which its peers would
  // still see as alive. The first rank that fails stops the others at once (they could only wait for it until
  // CHORUS_TIMEOUT); its exit is the one reported as the cause.
  bool stopping = worst != 0;
  for (size_t left = children.size(); left > 0; --left) {
    int status = 0;
    pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0) break;
    const size_t rank = std::find(children.begin(), children.end(), pid) - children.begin();
    if (rank < children.size()) children[rank] = 0;
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (code == 0) continue;
    if (!stopping) {
      if (WIFSIGNALED(status)) {
        fprintf(stderr, "%s: rank %zu was killed by signal %d (%s); stopping the other ranks\n", program, rank,
                WTERMSIG(status), strsignal(WTERMSIG(status)));
      } else {
        fprintf(stderr, "%s: rank %zu exited with code %d; stopping the other ranks\n", program, rank, code);
      }
      for (pid_t other : children)
        if (other > 0) kill(other, SIGTERM);
      stopping = true;
      worst = code;
    }
  }
  return worst;
}

}  // namespace

int runPerfTool(int argc, char** argv, const Collective& coll) {
  const char* name = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
  if (tools::printVersionIfAsked(argc, argv, name)) return 0;
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
  CHORUS_NCCL_CHECK(ncclGetUniqueId(&world.id));
  return runProcess(o, coll, world, program);
}

}  // namespace chorus::perf

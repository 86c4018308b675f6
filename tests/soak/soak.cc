// chorus_soak: a seeded random mix of every collective, grouped and ungrouped Send/Recv and groups mixing both, over
// N ranks through the NCCL C API, every result checked exactly. Ranks are forked processes (the transport is
// whatever CHORUS_TRANSPORT picks) or, with --threads, threads of one process. Each seed runs on fresh communicators.
//
// A failure prints the seed, the rank, the call and the calls before it, and the command that replays it; a crash or
// a hang is caught by the launcher, which reads each rank's progress from shared memory.
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "soak/soak_rank.hpp"

namespace {

struct Options {
  uint64_t seed = 1;
  int seeds = 1;
  double minutes = 0;  // > 0: seeds from `seed` on until this much time has passed
  size_t calls = 300;
  std::string only;  // "3,10-12,40-": runs just these calls (to cut a failing run down)
  int nranks = 4;
  bool threads = false;
  bool printCalls = false;
  double deadlineSeconds = 600;  // per seed
  soak::Shape shape;
};

const char* kUsage =
    "usage: chorus_soak [--seed S] [--seeds K | --minutes M] [--calls N] [--nranks N] [--threads]\n"
    "                   [--max-bytes B] [--deadline SECONDS] [--only LIST] [--print-calls]\n"
    "  Runs N ranks (default 4) through K seeds' random calls (default 1 seed of 300), every result checked.\n"
    "  The transport between processes is CHORUS_TRANSPORT's (shm, tcp, ...); --threads runs the ranks as threads.\n"
    "  --only 3,10-12,40- runs only those calls (to cut a failing run down); --print-calls lists the calls of --seed\n"
    "  and exits.\n";

bool parse(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](double lo, double hi, double* out) {
      if (i + 1 >= argc) return false;
      char* end = nullptr;
      *out = strtod(argv[++i], &end);
      return *end == 0 && *out >= lo && *out <= hi;
    };
    double v = 0;
    if (a == "--threads") {
      o->threads = true;
    } else if (a == "--print-calls") {
      o->printCalls = true;
    } else if (a == "--seed" && value(0, 1e15, &v)) {
      o->seed = static_cast<uint64_t>(v);
    } else if (a == "--seeds" && value(1, 1e9, &v)) {
      o->seeds = static_cast<int>(v);
    } else if (a == "--minutes" && value(0.01, 1e6, &v)) {
      o->minutes = v;
    } else if (a == "--calls" && value(1, 1e9, &v)) {
      o->calls = static_cast<size_t>(v);
    } else if (a == "--only" && i + 1 < argc) {
      o->only = argv[++i];
    } else if (a == "--nranks" && value(1, 64, &v)) {
      o->nranks = static_cast<int>(v);
      o->shape.nranks = o->nranks;
    } else if (a == "--max-bytes" && value(64, 1 << 30, &v)) {
      o->shape.maxBytes = static_cast<size_t>(v);
    } else if (a == "--deadline" && value(1, 1e6, &v)) {
      o->deadlineSeconds = v;
    } else {
      fprintf(stderr, "chorus_soak: bad or incomplete argument '%s'\n%s", a.c_str(), kUsage);
      return false;
    }
  }
  return true;
}

std::string replayCommand(const Options& o, uint64_t seed, int64_t calls) {
  std::string s = "chorus_soak --seed " + std::to_string(seed) + " --calls " + std::to_string(calls) + " --nranks " +
                  std::to_string(o.nranks) + " --max-bytes " + std::to_string(o.shape.maxBytes);
  if (!o.only.empty()) s += " --only " + o.only;
  if (o.threads) s += " --threads";
  if (const char* t = getenv("CHORUS_TRANSPORT")) s = "CHORUS_TRANSPORT=" + std::string(t) + " " + s;
  return s;
}

// The calls up to the one a failure stopped at, with the command that replays them.
void printFailure(const Options& o, uint64_t seed, const std::vector<soak::Call>& calls, int64_t at) {
  const int64_t last = std::min<int64_t>(std::max<int64_t>(at, 0), calls.size() - 1);
  fprintf(stderr, "chorus_soak: seed %llu failed at call %lld; the calls before it:\n", (unsigned long long)seed,
          (long long)last);
  for (int64_t k = std::max<int64_t>(0, last - 15); k <= last; ++k)
    fprintf(stderr, "  call %lld: %s\n", (long long)k, soak::describe(calls[k]).c_str());
  fprintf(stderr, "chorus_soak: replay: %s   (add --print-calls to list every call)\n",
          replayCommand(o, seed, last + 1).c_str());
}

double secondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// One rank joins, runs the calls and leaves; "" or what went wrong.
std::string rankMain(const ncclUniqueId& id, int rank, const Options& o, uint64_t seed,
                     const std::vector<soak::Call>& calls, soak::Progress* progress) {
  ncclComm_t comm = nullptr;
  if (ncclResult_t r = ncclCommInitRank(&comm, o.nranks, id, rank); r != ncclSuccess)
    return std::string("ncclCommInitRank: ") + ncclGetErrorString(r) + ": " + ncclGetLastError(nullptr);
  std::string error = soak::runRank(comm, rank, o.nranks, seed, calls, o.only, progress);
  if (error.empty()) {
    if (ncclResult_t r = ncclCommDestroy(comm); r != ncclSuccess)
      error = std::string("ncclCommDestroy: ") + ncclGetErrorString(r) + ": " + ncclGetLastError(nullptr);
  } else {
    ncclCommAbort(comm);
  }
  return error;
}

int64_t lowestCall(const soak::Progress* p, int n) {
  int64_t at = INT64_MAX;
  for (int r = 0; r < n; ++r) at = std::min<int64_t>(at, p[r].call.load());
  return at;
}

// Ranks as threads: a failing rank ends the process (the others would wait for it until their deadline).
bool runThreads(const Options& o, uint64_t seed, const std::vector<soak::Call>& calls, soak::Progress* progress) {
  ncclUniqueId id;
  if (ncclGetUniqueId(&id) != ncclSuccess) {
    fprintf(stderr, "chorus_soak: ncclGetUniqueId: %s\n", ncclGetLastError(nullptr));
    return false;
  }
  std::vector<std::thread> ranks;
  for (int r = 0; r < o.nranks; ++r) {
    ranks.emplace_back([&, r] {
      const std::string error = rankMain(id, r, o, seed, calls, &progress[r]);
      if (error.empty()) return;
      fprintf(stderr, "chorus_soak: seed %llu rank %d: %s\n", (unsigned long long)seed, r, error.c_str());
      printFailure(o, seed, calls, progress[r].call.load());
      fflush(stderr);
      _exit(1);
    });
  }
  std::thread watchdog([&] {
    const auto start = std::chrono::steady_clock::now();
    while (secondsSince(start) < o.deadlineSeconds) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      bool done = true;
      for (int r = 0; r < o.nranks; ++r) done = done && progress[r].finished.load(std::memory_order_acquire);
      if (done) return;
    }
    fprintf(stderr, "chorus_soak: seed %llu: the ranks did not finish within %.0f s\n", (unsigned long long)seed,
            o.deadlineSeconds);
    printFailure(o, seed, calls, lowestCall(progress, o.nranks));
    fflush(stderr);
    _exit(1);
  });
  for (auto& t : ranks) t.join();
  watchdog.join();
  return true;
}

// Ranks as processes, forked before the id exists so that each copies a process of one thread; the id follows
// through a pipe.
bool runProcesses(const Options& o, uint64_t seed, const std::vector<soak::Call>& calls, soak::Progress* progress) {
  std::vector<pid_t> pids;
  std::vector<int> pipes;
  fflush(stdout);
  fflush(stderr);
  for (int r = 0; r < o.nranks; ++r) {
    int fds[2];
    if (pipe(fds) != 0) {
      perror("chorus_soak: pipe");
      break;
    }
    const pid_t pid = fork();
    if (pid < 0) {
      perror("chorus_soak: fork");
      close(fds[0]);
      close(fds[1]);
      break;
    }
    if (pid == 0) {
      for (int p : pipes) close(p);
      close(fds[1]);
      ncclUniqueId id;
      pollfd pfd{fds[0], POLLIN, 0};
      if (poll(&pfd, 1, 60000) != 1 || read(fds[0], &id, sizeof(id)) != static_cast<ssize_t>(sizeof(id))) _exit(3);
      const std::string error = rankMain(id, r, o, seed, calls, &progress[r]);
      if (error.empty()) _exit(0);
      fprintf(stderr, "chorus_soak: seed %llu rank %d: %s\n", (unsigned long long)seed, r, error.c_str());
      fflush(stderr);
      _exit(1);
    }
    close(fds[0]);
    pids.push_back(pid);
    pipes.push_back(fds[1]);
  }
  ncclUniqueId id;
  const bool started = pids.size() == static_cast<size_t>(o.nranks) && ncclGetUniqueId(&id) == ncclSuccess;
  for (int p : pipes) {
    if (started && write(p, &id, sizeof(id)) != static_cast<ssize_t>(sizeof(id))) perror("chorus_soak: write");
    close(p);
  }
  const auto start = std::chrono::steady_clock::now();
  bool ok = started, hung = false;
  std::string cause = started ? "" : "could not start the ranks";
  int64_t failedAt = -1;
  for (size_t left = pids.size(); left > 0;) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid == 0) {
      if (!hung && secondsSince(start) > o.deadlineSeconds) {
        hung = true;
        ok = false;
        cause = "the ranks did not finish within " + std::to_string(static_cast<int>(o.deadlineSeconds)) + " s";
        failedAt = lowestCall(progress, o.nranks);
        for (pid_t p : pids)
          if (p > 0) kill(p, SIGKILL);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      continue;
    }
    if (pid < 0) break;
    --left;
    const size_t rank = std::find(pids.begin(), pids.end(), pid) - pids.begin();
    if (rank < pids.size()) pids[rank] = 0;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) continue;
    if (ok) {
      ok = false;
      cause = "rank " + std::to_string(rank) +
              (WIFSIGNALED(status) ? std::string(" was killed by ") + strsignal(WTERMSIG(status))
                                   : " exited with code " + std::to_string(WEXITSTATUS(status)));
      for (pid_t p : pids)
        if (p > 0) kill(p, SIGKILL);  // the others could only wait for it
    }
  }
  if (!ok) {
    // The first rank to exit need not be the first that failed: the listing ends at the earliest call under way.
    if (failedAt < 0) failedAt = lowestCall(progress, o.nranks);
    fprintf(stderr, "chorus_soak: seed %llu: %s\n", (unsigned long long)seed, cause.c_str());
    printFailure(o, seed, calls, failedAt);
  }
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parse(argc, argv, &o)) return 2;
  if (o.printCalls) {
    const auto calls = soak::makeCalls(o.seed, o.calls, o.shape);
    for (size_t k = 0; k < calls.size(); ++k) printf("call %zu: %s\n", k, soak::describe(calls[k]).c_str());
    return 0;
  }
  setvbuf(stdout, nullptr, _IOLBF, 0);
  // Shared with the forked ranks, so that the launcher can tell where a crashed or hung rank was.
  const size_t bytes = sizeof(soak::Progress) * o.nranks;
  void* shared = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED) {
    perror("chorus_soak: mmap");
    return 2;
  }
  const auto start = std::chrono::steady_clock::now();
  size_t seedsRun = 0, callsRun = 0;
  for (uint64_t seed = o.seed;; ++seed) {
    if (o.minutes > 0 ? secondsSince(start) > o.minutes * 60 : seedsRun == static_cast<size_t>(o.seeds)) break;
    auto* progress = new (shared) soak::Progress[o.nranks];
    const auto calls = soak::makeCalls(seed, o.calls, o.shape);
    const auto seedStart = std::chrono::steady_clock::now();
    const bool ok = o.threads ? runThreads(o, seed, calls, progress) : runProcesses(o, seed, calls, progress);
    if (!ok) {
      printf("chorus_soak: FAILED at seed %llu after %zu seeds and %zu calls that passed\n", (unsigned long long)seed,
             seedsRun, callsRun);
      return 1;
    }
    ++seedsRun;
    callsRun += calls.size();
    int64_t rssQuarter = 0, rssEnd = 0, fdsQuarter = 0, fdsEnd = 0;
    for (int r = 0; r < o.nranks; ++r) {
      rssQuarter = std::max(rssQuarter, progress[r].rssKibAtQuarter);
      rssEnd = std::max(rssEnd, progress[r].rssKibAtEnd);
      fdsQuarter = std::max(fdsQuarter, progress[r].fdsAtQuarter);
      fdsEnd = std::max(fdsEnd, progress[r].fdsAtEnd);
    }
    printf(
        "seed %llu: %zu calls on %d %s in %.1f s; largest rank's resident memory %.1f -> %.1f MiB and open fds "
        "%lld -> %lld from a quarter of the calls to the end\n",
        (unsigned long long)seed, calls.size(), o.nranks, o.threads ? "threads" : "processes", secondsSince(seedStart),
        rssQuarter / 1024.0, rssEnd / 1024.0, (long long)fdsQuarter, (long long)fdsEnd);
  }
  printf("chorus_soak: %zu seeds from %llu, %zu calls, every result as expected (%.0f s)\n", seedsRun,
         (unsigned long long)o.seed, callsRun, secondsSince(start));
  return 0;
}

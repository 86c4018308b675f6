// chorus-tune: measures the α (latency) and β (bandwidth) the algorithm selector's cost model uses, for the links
// present, and writes a tuning file for CHORUS_TUNING_FILE.
//
//   chorus-tune [--out FILE]            on one host: shared memory between 2 local processes, the reduction rate,
//                                       and the cost of a round when ranks outnumber cores
//   <launcher> chorus-tune [--out FILE] under torchrun/mpirun/srun-style variables: rank 0 also measures the link
//                                       to the first rank on another host (the inter-host class)
//   --choices [--ranks N]               also the fastest algorithm per collective and size, measured on the launched
//                                       ranks or on N local processes (tools/tune/choices.hpp)
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "bootstrap/host_id.hpp"
#include "bootstrap/id_handoff.hpp"
#include "bootstrap/launcher.hpp"
#include "chorus/communicator.hpp"
#include "chorus/unique_id.hpp"
#include "kernels/reduce.hpp"
#include "tools/tune/choices.hpp"
#include "tools/version_flag.hpp"
#include "tuner/costs.hpp"

using namespace chorus;
using Clock = std::chrono::steady_clock;

namespace {

// Large transfers exceed the caches, as the large collectives the bandwidth matters for do.
constexpr size_t kSmall = 8, kLarge = 32 << 20;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// One-way time (µs) of `bytes` between ranks a and b by ping-pong; every other rank only waits. Collective.
Status pingPong(Communicator& comm, int a, int b, size_t bytes, int iters, double* oneWay) {
  std::vector<char> buf(std::max<size_t>(bytes, 1));
  const int me = comm.rank();
  std::vector<double> samples;
  for (int rep = 0; rep < 5; ++rep) {
    const auto start = Clock::now();
    for (int i = 0; i < iters && (me == a || me == b); ++i) {
      if (me == a) {
        CHORUS_TRY(comm.send(buf.data(), bytes, DataType::kInt8, b));
        CHORUS_TRY(comm.recv(buf.data(), bytes, DataType::kInt8, b));
      } else {
        CHORUS_TRY(comm.recv(buf.data(), bytes, DataType::kInt8, a));
        CHORUS_TRY(comm.send(buf.data(), bytes, DataType::kInt8, a));
      }
    }
    samples.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count() / iters / 2);
  }
  int token = 0, sum = 0;
  CHORUS_TRY(comm.allReduce(&token, &sum, 1, DataType::kInt32, RedOp::sum()));  // the others wait here
  *oneWay = median(samples);
  return Status::ok();
}

// α of the link between ranks a and b (half a small round trip), and β (a large one-way transfer).
Status measureLink(Communicator& comm, int a, int b, algo::LinkCost* out) {
  double small = 0, large = 0;
  CHORUS_TRY(pingPong(comm, a, b, kSmall, 2000, &small));
  CHORUS_TRY(pingPong(comm, a, b, kLarge, 4, &large));
  out->alpha = small;
  out->beta = static_cast<double>(kLarge) / std::max(large - small, 1e-3) / 1e3;
  return Status::ok();
}

// β of shared memory when every rank sends and receives at once, as in a collective (a ping-pong has one copy in
// flight, a collective all of them): a 2-rank AllGather moves half its size each way in one step.
Status measureConcurrentBeta(Communicator& comm, double alpha, double* beta) {
  const size_t half = kLarge;
  std::vector<char> in(half), out(2 * half);
  CHORUS_TRY(comm.allGather(in.data(), out.data(), half, DataType::kInt8));
  std::vector<double> samples;
  for (int rep = 0; rep < 5; ++rep) {
    const auto start = Clock::now();
    CHORUS_TRY(comm.allGather(in.data(), out.data(), half, DataType::kInt8));
    samples.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
  }
  *beta = static_cast<double>(half) / std::max(median(samples) - alpha, 1e-3) / 1e3;
  return Status::ok();
}

// The extra time of a dependent round when 2x as many ranks as cores take turns: a ring all-gather of 8 bytes
// has n-1 dependent rounds.
Status measureRound(Communicator& comm, double alpha, double* penalty) {
  const int n = comm.size();
  std::vector<char> in(8), out(8 * static_cast<size_t>(n));
  for (int i = 0; i < 50; ++i) CHORUS_TRY(comm.allGather(in.data(), out.data(), 8, DataType::kInt8));
  const int iters = 300;
  const auto start = Clock::now();
  for (int i = 0; i < iters; ++i) CHORUS_TRY(comm.allGather(in.data(), out.data(), 8, DataType::kInt8));
  const double perRound = std::chrono::duration<double, std::micro>(Clock::now() - start).count() / iters / (n - 1);
  *penalty = std::max(0.0, perRound - alpha);
  return Status::ok();
}

double measureReduce() {
  const size_t count = kLarge / sizeof(float);
  std::vector<float> a(count, 1.0f), b(count, 2.0f), c(count);
  kernels::ReduceFn fn = kernels::reduceFunction(DataType::kFloat32, RedOpKind::kSum);
  std::vector<double> samples;
  for (int rep = 0; rep < 7; ++rep) {
    const auto start = Clock::now();
    fn(c.data(), a.data(), b.data(), count);
    samples.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
  }
  return static_cast<double>(kLarge) / median(samples) / 1e3;
}

// Runs `body(comm)` on n forked local processes (forked before the id exists: see bootstrap/id_handoff.hpp); the
// result of rank 0 comes back through a pipe.
Status onLocalProcesses(int n, const std::function<Status(Communicator&, std::string*)>& body, std::string* out) {
  bootstrap::IdHandoff handoff;
  CHORUS_TRY(handoff.open());
  int pipeFds[2];
  if (pipe(pipeFds) != 0) return systemError("pipe: " + std::string(strerror(errno)));
  fflush(stdout);
  std::vector<pid_t> children;
  for (int r = 0; r < n; ++r) {
    const pid_t pid = fork();
    if (pid < 0) return systemError("fork: " + std::string(strerror(errno)));
    if (pid == 0) {
      close(pipeFds[0]);
      UniqueId id;
      std::unique_ptr<Communicator> comm;
      std::string result;
      Status st = handoff.receive(&id);
      if (st.isOk()) st = Communicator::create(id, n, r, &comm);
      if (st.isOk()) st = body(*comm, &result);
      if (!st.isOk()) result = "error " + st.message();
      if (r == 0 && write(pipeFds[1], result.data(), result.size()) < 0) _exit(3);
      _exit(st.isOk() ? 0 : 1);
    }
    children.push_back(pid);
  }
  Status made = handoff.handOver(UniqueId::create, n);
  close(pipeFds[1]);
  char buffer[4096];
  ssize_t got = 0;
  out->clear();
  while ((got = read(pipeFds[0], buffer, sizeof(buffer))) > 0) out->append(buffer, static_cast<size_t>(got));
  close(pipeFds[0]);
  bool failed = false;
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    failed = failed || !WIFEXITED(status) || WEXITSTATUS(status) != 0;
  }
  if (!made.isOk()) return made;
  if (out->rfind("error ", 0) == 0) return systemError(out->substr(6));
  if (failed) return systemError("a measuring process failed");
  return Status::ok();
}

// The measured choices of launch shape `key`, with a note of where they were measured (or that none was kept).
void keepChoices(const std::string& key, const std::string& rules, const std::string& where, tuner::CostTable* table,
                 std::string* notes) {
  *notes += "# choices." + key + ": measured on " + where;
  if (rules.empty()) {
    *notes += "; no algorithm beat the selector's own choice by the margin, at any size\n";
  } else {
    table->choices[key] = rules;
    *notes += "\n";
  }
}

int fail(const Status& st) {
  fprintf(stderr, "chorus-tune: %s\n", st.message().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (chorus::tools::printVersionIfAsked(argc, argv, "chorus-tune")) return 0;
  std::string outPath;
  bool choices = false;
  int choiceRanks = 4;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--out" && i + 1 < argc) {
      outPath = argv[++i];
    } else if (arg == "--choices") {
      choices = true;
    } else if (arg == "--ranks" && i + 1 < argc) {
      choiceRanks = atoi(argv[++i]);
      if (choiceRanks < 2) {
        fprintf(stderr, "chorus-tune: --ranks must be at least 2 (got '%s')\n", argv[i]);
        return 2;
      }
    } else {
      FILE* to = arg == "-h" || arg == "--help" ? stdout : stderr;
      if (to == stderr) fprintf(stderr, "chorus-tune: unknown argument '%s'\n", arg.c_str());
      fprintf(to,
              "usage: chorus-tune [--out FILE] [--choices [--ranks N]] [--version]\n"
              "Measures the alpha (latency per round) and beta (bandwidth) of this host's shared memory and, when\n"
              "started by a launcher across hosts, of the network, and writes the table the algorithm selector\n"
              "reads from CHORUS_TUNING_FILE (default output: stdout).\n"
              "  --choices   also time every algorithm of AllReduce, ReduceScatter, AllGather, AlltoAll and\n"
              "              Broadcast from 8 B to 8 MiB on the launched ranks, or on N local processes (--ranks,\n"
              "              default 4), and write the fastest per size where it beats the selector's own by\n"
              "              10%%: the selector takes them over the cost model's for communicators of that many\n"
              "              ranks and hosts (the medians go to stderr)\n"
              "examples: chorus-tune --out tuning.txt && CHORUS_TUNING_FILE=tuning.txt chorus-info\n"
              "          chorus-tune --choices --ranks 8 --out tuning.txt\n"
              "          mpirun -np 4 chorus-tune --out tuning.txt\n");
      return to == stdout ? 0 : 2;
    }
  }
  tuner::CostTable table;
  std::string notes;
  bootstrap::LaunchInfo launch;
  const bool launched = bootstrap::detectLauncher(&launch);
  if (launched) {
    std::unique_ptr<Communicator> comm;
    Status st = Communicator::createFromEnvironment(&comm);
    if (!st.isOk()) return fail(st);
    // Every rank's host; rank 0 measures with a rank on its own host and with one on another host, if any.
    const std::string mine = bootstrap::hostId();
    std::vector<char> names(256 * static_cast<size_t>(comm->size()));
    std::vector<char> own(256, 0);
    strncpy(own.data(), mine.c_str(), 255);
    st = comm->allGather(own.data(), names.data(), 256, DataType::kInt8);
    if (!st.isOk()) return fail(st);
    int local = -1, remote = -1;
    for (int r = 1; r < comm->size(); ++r) {
      const bool same = strncmp(names.data() + 256 * r, names.data(), 256) == 0;
      if (same && local < 0) local = r;
      if (!same && remote < 0) remote = r;
    }
    if (local >= 0) {
      if (!(st = measureLink(*comm, 0, local, &table.intra)).isOk()) return fail(st);
      notes += "# intra: ranks 0 and " + std::to_string(local) + "\n";
    }
    if (remote >= 0) {
      if (!(st = measureLink(*comm, 0, remote, &table.inter)).isOk()) return fail(st);
      notes += "# inter: ranks 0 and " + std::to_string(remote) + " (another host)\n";
    }
    if (choices) {
      // Hosts numbered in order of first appearance, as the communicator numbers them.
      std::vector<std::string> hostIds;
      auto layout = std::make_shared<std::vector<int>>(comm->size());
      for (int r = 0; r < comm->size(); ++r) {
        const std::string id(names.data() + 256 * r, strnlen(names.data() + 256 * r, 256));
        const auto at = std::find(hostIds.begin(), hostIds.end(), id);
        (*layout)[r] = static_cast<int>(at - hostIds.begin());
        if (at == hostIds.end()) hostIds.push_back(id);
      }
      std::string rules, report;
      st = tools::measureChoices(*comm, hostIds.size() > 1 ? layout : nullptr, {}, &rules, &report);
      if (!st.isOk()) return fail(st);
      if (comm->rank() == 0) {
        fputs(report.c_str(), stderr);
        keepChoices(tuner::choicesKey(comm->size(), static_cast<int>(hostIds.size())), rules, "the launched ranks",
                    &table, &notes);
      }
    }
    if (comm->rank() != 0) return 0;
    // Measured among the ranks as launched, the α already carry whatever sharing of cores the launch has.
    table.oversubscribedRound = 0;
    table.oversubscribedPairs = 1;
    table.oversubscribedMessage = 0;
    notes += "# oversubscribed round, message and pairs factor: none (the links were measured as launched)\n";
  } else {
    std::string result;
    Status st = onLocalProcesses(
        2,
        [](Communicator& comm, std::string* out) {
          algo::LinkCost c;
          CHORUS_TRY(measureLink(comm, 0, 1, &c));
          CHORUS_TRY(measureConcurrentBeta(comm, c.alpha, &c.beta));
          *out = std::to_string(c.alpha) + " " + std::to_string(c.beta);
          return Status::ok();
        },
        &result);
    if (!st.isOk()) return fail(st);
    sscanf(result.c_str(), "%lf %lf", &table.intra.alpha, &table.intra.beta);
    notes += "# intra: 2 processes on this host (shared memory); beta with both copying at once\n";
    const int over = 2 * static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
    const double alpha = table.intra.alpha;
    st = onLocalProcesses(
        over,
        [alpha](Communicator& comm, std::string* out) {
          double penalty = 0;
          CHORUS_TRY(measureRound(comm, alpha, &penalty));
          *out = std::to_string(penalty);
          return Status::ok();
        },
        &result);
    if (!st.isOk()) return fail(st);
    table.oversubscribedRound = atof(result.c_str());
    notes += "# oversubscribed round: " + std::to_string(over) + " processes on this host's cores\n";
    notes += "# oversubscribed message and pairs factor: not measured, the defaults\n";
    notes += "# inter: not measured (one host); run chorus-tune under a launcher across hosts for it\n";
    if (choices) {
      st = onLocalProcesses(
          choiceRanks,
          [](Communicator& comm, std::string* out) {
            std::string rules, report;
            CHORUS_TRY(tools::measureChoices(comm, nullptr, {}, &rules, &report));
            *out = rules + "\n" + report;
            return Status::ok();
          },
          &result);
      if (!st.isOk()) return fail(st);
      const size_t end = result.find('\n');
      fputs(result.substr(end + 1).c_str(), stderr);
      keepChoices(tuner::choicesKey(choiceRanks, 1), result.substr(0, end),
                  std::to_string(choiceRanks) + " processes on this host", &table, &notes);
    }
  }
  table.reduceGBps = measureReduce();
  const std::string text = "# chorus tuning file, written by chorus-tune on " + bootstrap::hostId() + "\n" + notes +
                           tuner::formatTuning(table);
  if (outPath.empty()) {
    fputs(text.c_str(), stdout);
  } else {
    std::ofstream out(outPath);
    if (!(out << text)) return fail(systemError("cannot write " + outPath));
    printf("%s", text.c_str());
    printf("wrote %s (use it with CHORUS_TUNING_FILE=%s)\n", outPath.c_str(), outPath.c_str());
  }
  return 0;
}

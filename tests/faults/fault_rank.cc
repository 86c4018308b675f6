// One rank of a fault-injection run (tests/faults/fault_matrix.sh starts N of them, on one host or on simulated
// hosts): every rank runs small AllReduces; at iteration kFaultAt rank VICTIM suffers FAULT, and each survivor
// measures how long its failure took to be reported, how long agreement and shrink took, and its first AllReduce on
// the shrunk communicator. It prints one line of figures.
//
//   FAULT=kill|stop|linkdown|delay VICTIM=r FAULT_DIR=dir fault_rank      (rank, size, rendezvous: torchrun's
//   variables; the heartbeat: CHORUS_HEARTBEAT_PERIOD and CHORUS_HEARTBEAT_TIMEOUT)
//
// kill: SIGKILL. stop: SIGSTOP (a hang: the process and its sockets stay; rank 0 kills it at the end). linkdown:
// the victim's host link (eth0 in its network namespace) set down; the victim exits once rank 0 is done. delay: 100 ms
// added on the victim's link (tc netem), or where the kernel has no netem a 0.5 s stall of the victim (SIGSTOP, then
// SIGCONT from a child); nobody fails, so any report is a false positive.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "chorus/communicator.hpp"

using namespace chorus;

namespace {

constexpr int kFaultAt = 50;
constexpr int kAfterDelay = 3;  // iterations run after a delay is added

// True when this process has a network namespace of its own (a simulated host): only there may it take its link
// down or slow it, never the machine's.
bool inOwnNetworkNamespace() {
  FILE* out = popen("ip netns identify 2>/dev/null", "r");  // the namespace's name; nothing in the machine's own
  if (!out) return false;
  char name[256] = {};
  const bool named = fgets(name, sizeof name, out) != nullptr && name[0] != '\n' && name[0] != '\0';
  pclose(out);
  return named;
}

double wallSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

int fail(const std::string& what) {
  fprintf(stderr, "fault_rank: %s\n", what.c_str());
  return 1;
}

}  // namespace

int main() {
  const char* faultEnv = getenv("FAULT");
  const char* victimEnv = getenv("VICTIM");
  const char* dirEnv = getenv("FAULT_DIR");
  if (!faultEnv || !victimEnv || !dirEnv) return fail("set FAULT, VICTIM and FAULT_DIR");
  const std::string fault = faultEnv, dir = dirEnv;
  const int victim = atoi(victimEnv);
  std::unique_ptr<Communicator> comm;
  if (Status st = Communicator::createFromEnvironment(&comm); !st.isOk()) return fail("init: " + st.message());
  const int rank = comm->rank(), n = comm->size();
  if (victim <= 0 || victim >= n) return fail("VICTIM must name a rank other than 0 (whose process holds the store)");
  std::vector<float> buf(1024, 1.0f);
  Status st;
  double slowest = 0;
  int it = 0;
  for (; st.isOk() && it < kFaultAt + (fault == "delay" ? kAfterDelay : 1000000); ++it) {
    if (it == kFaultAt && rank == victim) {
      std::ofstream(dir + "/fault_time") << std::to_string(wallSeconds()) << "\n";
      std::ofstream(dir + "/victim_pid") << getpid() << "\n";
      if (fault == "kill") kill(getpid(), SIGKILL);
      if (fault == "stop") kill(getpid(), SIGSTOP);
      if (fault == "linkdown") {
        if (!inOwnNetworkNamespace()) return fail("linkdown needs a simulated host (a network namespace)");
        if (system("ip link set eth0 down") != 0) return fail("cannot set eth0 down");
        // The others go on without it; it ends when they are done (rank 0 says so), or after 30 s.
        for (int wait = 0; wait < 300 && access((dir + "/done").c_str(), F_OK) != 0; ++wait)
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
        _exit(0);
      }
      if (fault == "delay") {
        // Where the kernel has no netem (or the rank has no link of its own), the delay is a stall instead.
        const bool netem =
            inOwnNetworkNamespace() && system("tc qdisc replace dev eth0 root netem delay 100ms 2>/dev/null") == 0;
        printf("fault=delay ranks=%d rank=%d how=%s\n", n, rank,
               netem ? "netem_100ms_on_its_link" : "stall_0.5s_SIGSTOP_then_SIGCONT");
        fflush(stdout);
        if (!netem) {
          const pid_t self = getpid();
          if (fork() == 0) {
            usleep(500000);
            kill(self, SIGCONT);
            _exit(0);
          }
          kill(self, SIGSTOP);
        }
      }
    }
    const double start = wallSeconds();
    st = comm->allReduce(buf.data(), buf.data(), buf.size(), DataType::kFloat32, RedOp::sum());
    if (it >= kFaultAt) slowest = std::max(slowest, wallSeconds() - start);
  }
  const double reported = wallSeconds();
  if (st.isOk()) {
    printf("fault=%s ranks=%d rank=%d no failure reported; slowest call after the fault %.3f s\n", fault.c_str(), n,
           rank, slowest);
    comm.reset();
    return 0;
  }
  double faultTime = 0;
  std::ifstream(dir + "/fault_time") >> faultTime;
  uint32_t value = 1;
  std::vector<int> members;
  if (Status a = comm->agree(&value, &members, 0.5); !a.isOk()) return fail("agree: " + a.message());
  std::vector<int> excluded;
  for (int q = 0; q < n; ++q)
    if (std::find(members.begin(), members.end(), q) == members.end()) excluded.push_back(q);
  std::unique_ptr<Communicator> survivors;
  if (Status s = comm->shrink(excluded, &survivors); !s.isOk()) return fail("shrink: " + s.message());
  const double shrunk = wallSeconds();
  float x = 1;
  if (Status s = survivors->allReduce(&x, &x, 1, DataType::kFloat32, RedOp::sum()); !s.isOk())
    return fail("the first AllReduce after the shrink: " + s.message());
  const double first = wallSeconds();
  if (x != static_cast<float>(n - static_cast<int>(excluded.size())))
    return fail("the survivors' sum is " + std::to_string(x));
  printf(
      "fault=%s ranks=%d rank=%d detected %.3f s agreed_and_shrunk %.3f s first_collective %.3f s left_out %zu "
      "cause: %s\n",
      fault.c_str(), n, rank, faultTime > 0 ? reported - faultTime : -1.0, shrunk - reported, first - shrunk,
      excluded.size(), st.message().c_str());
  fflush(stdout);
  if (rank == 0) {
    pid_t pid = 0;
    std::ifstream(dir + "/victim_pid") >> pid;
    if (fault == "stop" && pid > 0) kill(pid, SIGKILL);
    std::ofstream(dir + "/done") << "\n";
  }
  // Torn down, the shrunk communicator delivers what it still holds; the old one, with its connections to the
  // victim, is left to the process's end.
  survivors.reset();
  comm.release();
  return 0;
}

// ncclCommGrow across processes: a communicator of two processes grows by two joining processes, which get the id
// from its coordinator through a pipe; a joiner that dies before it joins ends the others' grow with an error at
// their deadline (CHORUS_TIMEOUT), never a hang.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "nccl.h"

namespace {

constexpr int kOld = 2, kGrown = 4;
constexpr int kGrowFailed = 3;  // a rank's exit code when its grow returned an error

// Waits end after 10 s in these processes; set before main, so before chorus reads its settings.
const bool kTimeoutSet = [] { return setenv("CHORUS_TIMEOUT", "10", 1) == 0; }();

// Grows to kGrown and reduces each rank's (rank + 1) over the grown communicator; the exit code of the process.
int growAndReduce(ncclComm_t comm, const ncclUniqueId* id, int rank) {
  ncclComm_t grown = nullptr;
  ncclResult_t r = ncclCommGrow(comm, kGrown, id, comm ? -1 : rank, &grown, nullptr);
  if (r != ncclSuccess) {
    fprintf(stderr, "rank %d: ncclCommGrow: %s\n", rank, ncclGetLastError(nullptr));
    return kGrowFailed;
  }
  int newRank = -1;
  ncclCommUserRank(grown, &newRank);
  float sum = static_cast<float>(newRank + 1);
  if (newRank != rank || ncclAllReduce(&sum, &sum, 1, ncclFloat32, ncclSum, grown, nullptr) != ncclSuccess ||
      sum != 10.0f) {
    fprintf(stderr, "rank %d: grown rank %d, sum %g: %s\n", rank, newRank, sum, ncclGetLastError(nullptr));
    return 1;
  }
  return ncclCommDestroy(grown) == ncclSuccess ? 0 : 1;
}

// The old ranks: init over `base`, rank 0 makes the grow id and writes it once per joiner into `idPipe`.
int oldRank(const ncclUniqueId& base, int rank, int idPipe) {
  ncclComm_t comm = nullptr;
  if (ncclCommInitRank(&comm, kOld, base, rank) != ncclSuccess) return 1;
  ncclUniqueId id;
  if (rank == 0) {
    if (ncclCommGetUniqueId(comm, &id) != ncclSuccess) return 1;
    for (int j = kOld; j < kGrown; ++j)
      if (write(idPipe, &id, sizeof(id)) != static_cast<ssize_t>(sizeof(id))) return 1;
  }
  const int code = growAndReduce(comm, rank == 0 ? &id : nullptr, rank);
  ncclCommDestroy(comm);
  return code;
}

int joiner(int rank, int idPipe, bool dies) {
  ncclUniqueId id;
  if (read(idPipe, &id, sizeof(id)) != static_cast<ssize_t>(sizeof(id))) return 1;
  if (dies) raise(SIGKILL);  // gone with the id in hand, before it joins
  return growAndReduce(nullptr, &id, rank);
}

struct Exit {
  int code = -1;
  double seconds = 0;
};

// Runs the four processes; a process still running after `deadline` seconds is killed (code 128 + 9).
std::vector<Exit> run(int deadJoiner, double deadline = 90) {
  ncclUniqueId base;
  EXPECT_EQ(ncclGetUniqueId(&base), ncclSuccess);
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  const auto start = std::chrono::steady_clock::now();
  std::vector<pid_t> pids;
  for (int rank = 0; rank < kGrown; ++rank) {
    const pid_t pid = fork();
    if (pid == 0) {
      const int code = rank < kOld ? oldRank(base, rank, fds[1]) : joiner(rank, fds[0], rank == deadJoiner);
      _exit(code);
    }
    pids.push_back(pid);
  }
  close(fds[0]);
  close(fds[1]);
  std::vector<Exit> exits(kGrown);
  int left = kGrown;
  while (left > 0) {
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    for (int rank = 0; rank < kGrown; ++rank) {
      if (exits[rank].code != -1) continue;
      int status = 0;
      if (elapsed > deadline) kill(pids[rank], SIGKILL);
      if (waitpid(pids[rank], &status, elapsed > deadline ? 0 : WNOHANG) != pids[rank]) continue;
      exits[rank].code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      exits[rank].seconds = elapsed;
      --left;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return exits;
}

TEST(CapiGrowProcesses, JoiningProcessesTakeTheRanksAfterTheOldOnes) {
  for (const Exit& e : run(-1)) EXPECT_EQ(e.code, 0);
}

TEST(CapiGrowProcesses, AJoinerThatDiesEndsTheOthersGrowWithAnError) {
  const std::vector<Exit> exits = run(3);
  EXPECT_EQ(exits[3].code, 128 + SIGKILL);
  for (int rank : {0, 1, 2}) {
    EXPECT_EQ(exits[rank].code, kGrowFailed) << "rank " << rank;
    EXPECT_LT(exits[rank].seconds, 60) << "rank " << rank << " waited past its deadline";
  }
}

}  // namespace

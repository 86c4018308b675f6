// The parameter server: bsp gives the bits of one process averaging the workers' gradients (data parallelism's
// reference) for any split of workers and servers, with and without replication; ssp never lets a worker run
// more than its bound ahead of the slowest (and asp, measured the same way, does); a SIGKILLed server with a
// replica loses no update, and without one every worker's step fails naming it; a dead worker fails the job.
#include "chorus/training/param_server/param_server.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "support/process_ranks.hpp"
#include "training/fixtures.hpp"
#include "training/ranks.hpp"

namespace chorus::training::param_server {
namespace {

using chorus::testing::Batch;
using chorus::testing::makeBatch;
using chorus::testing::onRanks;
using chorus::testing::RankKind;

constexpr int kMicroBatches = 2;
constexpr size_t kRows = 5;

ParamServerConfig testConfig(int servers) {
  ParamServerConfig c;
  c.servers = servers;
  c.chunkBytes = 10 * sizeof(float);  // 131 parameters: many chunks per range, the last ones short
  c.optimizer = chorus::testing::testOptimizer();
  c.seed = chorus::testing::kInitSeed;
  c.timeoutSeconds = 60;
  return c;
}

// Worker w's step: its micro-batches of the data-parallel reference.
Status trainStep(Worker& worker, int step) {
  const std::vector<size_t> widths = chorus::testing::primeMlpWidths();
  for (int m = 0; m < kMicroBatches; ++m) {
    Batch b =
        makeBatch(step * kMicroBatches + m, worker.index(), kRows, widths.front(), static_cast<int>(widths.back()));
    LossResult r;
    CHORUS_TRY(worker.forwardBackward(b.x, b.labels, &r));
  }
  return worker.step();
}

// Runs `steps` steps on every worker, then compares its parameters with the reference, while the servers serve.
std::string trainAgainstReference(Communicator& comm, const ParamServerConfig& config, int steps) {
  Sequential model = makeMlp(chorus::testing::primeMlpWidths());
  std::unique_ptr<Server> server;
  std::unique_ptr<Worker> worker;
  if (Status st = join(comm, model, config, &server, &worker); !st.isOk()) return st.message();
  if (server) {
    Status st = server->serve();
    return st.isOk() ? "" : st.message();
  }
  for (int s = 0; s < steps; ++s)
    if (Status st = trainStep(*worker, s); !st.isOk()) return st.message();
  if (Status st = worker->finish(); !st.isOk()) return st.message();
  const auto reference = chorus::testing::referenceDataParallel(chorus::testing::primeMlpWidths(), worker->workers(),
                                                                steps, kMicroBatches, kRows);
  return chorus::testing::sameBits(worker->params(), reference);
}

TEST(ParamServer, BspGivesTheBitsOfDataParallelism) {
  for (auto [workers, servers] : {std::pair{1, 1}, {2, 1}, {2, 2}, {3, 2}, {2, 3}}) {
    for (bool replicate : {false, true}) {
      if (replicate && servers < 2) continue;
      ParamServerConfig c = testConfig(servers);
      c.replicate = replicate;
      EXPECT_EQ(onRanks(workers + servers, RankKind::kThreads,
                        [&](Communicator& comm) { return trainAgainstReference(comm, c, 4); }),
                "")
          << workers << " workers, " << servers << " servers, replication " << replicate;
    }
  }
}

TEST(ParamServer, OneChunkPerRangeAndWholeModelChunks) {
  for (size_t chunkBytes : {size_t{4}, size_t{1} << 20}) {
    ParamServerConfig c = testConfig(2);
    c.chunkBytes = chunkBytes;
    EXPECT_EQ(onRanks(4, RankKind::kThreads, [&](Communicator& comm) { return trainAgainstReference(comm, c, 3); }), "")
        << chunkBytes << "-byte chunks";
  }
}

// 3 workers, worker 0 slow; returns the largest staleness each worker saw. Under ssp worker 0 sleeps before each
// step. Under asp nothing holds the others back, so worker 0 starts only once they have taken all their steps: their
// lead is then certain rather than a matter of timing (a sanitizer can make a step slower than any sleep).
std::vector<long> largestStaleness(Sync sync, int bound, std::string* failures) {
  constexpr int kWorkers = 3, kSteps = 8;
  std::vector<long> largest(kWorkers, -1);
  std::atomic<int> fastWorkersDone{0};
  ParamServerConfig c = testConfig(2);
  c.sync = sync;
  c.staleness = bound;
  *failures = onRanks(kWorkers + 2, RankKind::kThreads, [&](Communicator& comm) -> std::string {
    Sequential model = makeMlp(chorus::testing::primeMlpWidths());
    std::unique_ptr<Server> server;
    std::unique_ptr<Worker> worker;
    if (Status st = join(comm, model, c, &server, &worker); !st.isOk()) return st.message();
    if (server) return server->serve().message();
    if (worker->index() == 0 && sync == Sync::kAsp) {
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      while (fastWorkersDone.load() < kWorkers - 1)
        if (std::chrono::steady_clock::now() > deadline)
          return "the fast workers did not finish within 60 s";
        else
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    for (int s = 0; s < kSteps; ++s) {
      if (worker->index() == 0 && sync == Sync::kSsp) std::this_thread::sleep_for(std::chrono::milliseconds(30));
      if (Status st = trainStep(*worker, s); !st.isOk()) return st.message();
    }
    if (worker->index() != 0) ++fastWorkersDone;
    largest[worker->index()] = static_cast<long>(worker->stats().staleness.size()) - 1;
    return worker->finish().message();
  });
  return largest;
}

TEST(ParamServer, SspNeverExceedsItsBoundAndAspDoes) {
  std::string failures;
  for (int bound : {0, 1, 2}) {
    const std::vector<long> seen = largestStaleness(Sync::kSsp, bound, &failures);
    EXPECT_EQ(failures, "");
    for (size_t w = 0; w < seen.size(); ++w) {
      EXPECT_GE(seen[w], 0) << "worker " << w << " reported nothing";
      EXPECT_LE(seen[w], bound) << "ssp bound " << bound << ", worker " << w;
    }
  }
  // Measured the same way, asp lets the fast workers run all their steps ahead of worker 0's first.
  const std::vector<long> seen = largestStaleness(Sync::kAsp, 0, &failures);
  EXPECT_EQ(failures, "");
  EXPECT_EQ(std::max(seen[1], seen[2]), 8) << "asp: the fast workers did not run ahead of the slow one";
}

TEST(ParamServer, BadConfigurationsAreNamed) {
  Sequential model = makeMlp(chorus::testing::primeMlpWidths());
  auto joinWith = [&](const ParamServerConfig& c) {
    return onRanks(3, RankKind::kThreads, [&](Communicator& comm) {
      std::unique_ptr<Server> server;
      std::unique_ptr<Worker> worker;
      Sequential m = makeMlp(chorus::testing::primeMlpWidths());
      ParamServerConfig mine = c;
      if (c.seed == 99 && comm.rank() == 1) mine.sync = Sync::kAsp;  // one rank configured differently
      return join(comm, m, mine, &server, &worker).message();
    });
  };
  ParamServerConfig c = testConfig(0);
  EXPECT_NE(joinWith(c).find("needs 1 to 2 servers"), std::string::npos);
  c.servers = 3;
  EXPECT_NE(joinWith(c).find("needs 1 to 2 servers"), std::string::npos);
  c.servers = 1;
  c.replicate = true;
  EXPECT_NE(joinWith(c).find("replication needs at least 2 servers"), std::string::npos);
  c.replicate = false;
  c.staleness = -1;
  EXPECT_NE(joinWith(c).find("staleness"), std::string::npos);
  c.staleness = 0;
  c.seed = 99;
  EXPECT_NE(joinWith(c).find("configured a different parameter server"), std::string::npos);
  Sync sync;
  EXPECT_NE(parseSync("sync", &sync).message().find("bsp, asp or ssp"), std::string::npos);
}

// Processes: 2 workers, 2 servers; server 1 (rank 3) SIGKILLs itself once it applied `killAfter` chunk rounds.
std::vector<chorus::testing::ProcessResult> killServer(bool replicate, long killAfter, int steps) {
  ParamServerConfig c = testConfig(2);
  c.replicate = replicate;
  c.timeoutSeconds = 30;
  setenv("CHORUS_TIMEOUT", "30", 1);
  return chorus::testing::runProcesses(
      4, "shm",
      [&](Communicator& comm) -> std::string {
        Sequential model = makeMlp(chorus::testing::primeMlpWidths());
        std::unique_ptr<Server> server;
        std::unique_ptr<Worker> worker;
        if (Status st = join(comm, model, c, &server, &worker); !st.isOk()) return st.message();
        if (server && comm.rank() == 3) {
          std::atomic<bool> stop{false};
          std::thread victim([&] {
            while (!stop && server->stats().pushesApplied < killAfter)
              std::this_thread::sleep_for(std::chrono::microseconds(50));
            if (!stop) kill(getpid(), SIGKILL);
          });
          Status st = server->serve();
          stop = true;
          victim.join();
          return "the victim outlived the run: " + st.message();
        }
        if (server) {
          Status st = server->serve();
          const ServerStats s = server->stats();
          if (replicate && st.isOk() && s.promotedRange != 1) return "server 0 did not take over range 1";
          return st.message();
        }
        for (int s = 0; s < steps; ++s) {
          if (Status st = trainStep(*worker, s); !st.isOk()) return st.message();
        }
        if (Status st = worker->finish(); !st.isOk()) return st.message();
        if (worker->stats().failovers != 1) return "failovers: " + std::to_string(worker->stats().failovers);
        const auto reference =
            chorus::testing::referenceDataParallel(chorus::testing::primeMlpWidths(), 2, steps, kMicroBatches, kRows);
        return chorus::testing::sameBits(worker->params(), reference);
      },
      90);
}

TEST(ParamServer, AKilledServerWithAReplicaLosesNoUpdate) {
  // Range 1 holds 65 parameters: 7 chunks a step. The kill lands in the third step.
  const auto results = killServer(true, 2 * 7 + 3, 6);
  ASSERT_EQ(results.size(), 4u);
  EXPECT_EQ(results[3].exitCode, 128 + SIGKILL) << results[3].message;
  for (int r : {0, 1, 2}) EXPECT_EQ(results[r].exitCode, 0) << "rank " << r << ": " << results[r].message;
}

TEST(ParamServer, AKilledServerWithoutAReplicaFailsEveryWorkerNamingIt) {
  const auto results = killServer(false, 2 * 7 + 3, 6);
  ASSERT_EQ(results.size(), 4u);
  EXPECT_EQ(results[3].exitCode, 128 + SIGKILL) << results[3].message;
  for (int w : {0, 1}) {
    EXPECT_NE(results[w].exitCode, 0);
    EXPECT_NE(results[w].message.find("parameter server 1 (rank 3) failed"), std::string::npos) << results[w].message;
    EXPECT_NE(results[w].message.find("has no replica"), std::string::npos) << results[w].message;
    EXPECT_LT(results[w].secondsToExit, 20) << results[w].message;
  }
}

TEST(ParamServer, ADeadWorkerFailsTheJobNamingIt) {
  ParamServerConfig c = testConfig(1);
  c.timeoutSeconds = 30;
  setenv("CHORUS_TIMEOUT", "30", 1);
  const auto results = chorus::testing::runProcesses(
      3, "shm",
      [&](Communicator& comm) -> std::string {
        Sequential model = makeMlp(chorus::testing::primeMlpWidths());
        std::unique_ptr<Server> server;
        std::unique_ptr<Worker> worker;
        if (Status st = join(comm, model, c, &server, &worker); !st.isOk()) return st.message();
        if (server) return server->serve().message();
        for (int s = 0; s < 6; ++s) {
          if (worker->index() == 1 && s == 3) kill(getpid(), SIGKILL);
          if (Status st = trainStep(*worker, s); !st.isOk()) return st.message();
        }
        return "worker 0 finished although worker 1 died";
      },
      90);
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(results[1].exitCode, 128 + SIGKILL);
  EXPECT_NE(results[0].message.find("worker 1 failed"), std::string::npos) << results[0].message;
  EXPECT_NE(results[2].message.find("worker 1 failed"), std::string::npos) << results[2].message;
}

}  // namespace
}  // namespace chorus::training::param_server

// chorus-trace names the rank behind a failure from the ranks' flight records: a rank that skipped a call, one that
// passed another count, one that was stopped (a hang) and one that was killed, as processes over shm; and the
// slowest rank tops the straggler scores.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/process_ranks.hpp"

namespace chorus::testing {
namespace {

constexpr int kRanks = 4;

std::string runTool(const std::string& dir) {
  std::string out;
  FILE* p = popen((std::string(CHORUS_TRACE_TOOL) + " " + dir + " 2>&1").c_str(), "r");
  if (!p) return "popen failed";
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

Status allReduce(Communicator& c, size_t count = 4096) {
  std::vector<float> b(count, 1.0f);
  return c.allReduce(b.data(), b.data(), count, DataType::kFloat32, RedOp::sum());
}

class TraceAnalyzer : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "trace_" + std::to_string(getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    unsetenv("CHORUS_TIMEOUT");
    unsetenv("CHORUS_TRACE_DIR");
    unsetenv("CHORUS_ALGO");
    std::filesystem::remove_all(dir_);
  }
  std::string dir_;
};

TEST_F(TraceAnalyzer, NamesTheRankThatSkippedACall) {
  setenv("CHORUS_TIMEOUT", "2", 1);
  runProcesses(kRanks, "shm", [&](Communicator& comm) -> std::string {
    for (int i = 0; i < 3; ++i)
      if (Status st = allReduce(comm); !st.isOk()) return st.message();
    if (comm.rank() == 1)
      std::this_thread::sleep_for(std::chrono::seconds(3));  // skips the fourth while the others time out
    else if (allReduce(comm).isOk())
      return "the fourth AllReduce succeeded without rank 1";
    return comm.dumpFlightRecord(dir_).message();
  });
  const std::string report = runTool(dir_);
  EXPECT_NE(report.find("verdict: rank 1 did not reach seq 4"), std::string::npos) << report;
  EXPECT_NE(report.find("never reached it: rank 1 (its last call: seq 3 AllReduce(count 4096"), std::string::npos)
      << report;
}

TEST_F(TraceAnalyzer, NamesTheRankThatPassedAnotherCount) {
  runProcesses(kRanks, "shm", [&](Communicator& comm) -> std::string {
    if (Status st = allReduce(comm); !st.isOk()) return st.message();
    if (allReduce(comm, comm.rank() == 1 ? 3 : 4).isOk()) return "the mismatched AllReduce succeeded";
    return comm.dumpFlightRecord(dir_).message();
  });
  const std::string report = runTool(dir_);
  EXPECT_NE(report.find("verdict: rank 1 called seq 2 with other arguments"), std::string::npos) << report;
  EXPECT_NE(report.find("rank 1 called AllReduce(count 3, float, sum)"), std::string::npos) << report;
  EXPECT_NE(report.find("ranks 0, 2, 3 called AllReduce(count 4, float, sum)"), std::string::npos) << report;
}

// The victim stops (or dies) before its third call; the survivors write their records themselves (CHORUS_TRACE_DIR)
// when their call fails: on a timeout for a stopped rank, at once for a killed one. Rank 0 then ends the stopped
// rank, whose record never comes. The direct AllReduce has every rank wait for the victim's part in its first
// round, so each survivor's record names it (recursive doubling's would have some wait for another survivor).
void loseRankTwo(const std::string& dir, int signal) {
  setenv("CHORUS_TIMEOUT", "2", 1);
  setenv("CHORUS_TRACE_DIR", dir.c_str(), 1);
  setenv("CHORUS_ALGO", "allreduce:direct", 1);
  const std::string pidFile = dir + "/victim.pid";
  auto results = runProcesses(kRanks, "shm", [&](Communicator& comm) -> std::string {
    for (int i = 0; i < 2; ++i)
      if (Status st = allReduce(comm); !st.isOk()) return st.message();
    if (comm.rank() == 2) {
      std::ofstream(pidFile) << getpid() << "\n";
      kill(getpid(), signal);
    }
    if (allReduce(comm).isOk()) return "an AllReduce succeeded without rank 2";
    if (comm.rank() == 0 && signal == SIGSTOP) {
      pid_t victim = 0;
      std::ifstream(pidFile) >> victim;
      if (victim > 0) kill(victim, SIGKILL);
    }
    return "";
  });
  EXPECT_EQ(results[2].exitCode, 128 + SIGKILL);
  for (int r : {0, 1, 3}) EXPECT_EQ(results[r].exitCode, 0) << "rank " << r << ": " << results[r].message;
}

TEST_F(TraceAnalyzer, NamesAStoppedRank) {
  loseRankTwo(dir_, SIGSTOP);
  const std::string report = runTool(dir_);
  EXPECT_NE(report.find("verdict: rank 2 left no record (killed or stopped) while the others were in seq 3"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("written on timeout"), std::string::npos) << report;
  EXPECT_NE(report.find("failed in it: ranks 0, 1, 3"), std::string::npos) << report;
  EXPECT_NE(report.find("rank 2's side of it never began at ranks 0, 1, 3"), std::string::npos) << report;
}

TEST_F(TraceAnalyzer, NamesAKilledRank) {
  loseRankTwo(dir_, SIGKILL);
  const std::string report = runTool(dir_);
  EXPECT_NE(report.find("verdict: rank 2 left no record (killed or stopped) while the others were in seq 3"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("no record from rank 2"), std::string::npos) << report;
  EXPECT_EQ(report.find("written on timeout"), std::string::npos) << report;  // a death is seen at once
}

TEST_F(TraceAnalyzer, TheSlowestRankTopsTheStragglerScores) {
  runProcesses(3, "shm", [&](Communicator& comm) -> std::string {
    for (int i = 0; i < 6; ++i) {
      if (comm.rank() == 2) std::this_thread::sleep_for(std::chrono::milliseconds(20));
      if (Status st = allReduce(comm, 8); !st.isOk()) return st.message();
    }
    return comm.dumpFlightRecord(dir_).message();
  });
  const std::string report = runTool(dir_);
  EXPECT_NE(report.find("verdict: nothing wrong found"), std::string::npos) << report;
  EXPECT_NE(report.find("every rank completed every recorded call (seq 1 to 6)"), std::string::npos) << report;
  const size_t table = report.find("last to arrive\n");
  ASSERT_NE(table, std::string::npos) << report;
  EXPECT_EQ(report.substr(table + 15, 8), "     2  ") << report;  // rank 2 on the first row
}

TEST_F(TraceAnalyzer, AnEmptyDirectoryIsSaidSo) {
  const std::string report = runTool(dir_);
  EXPECT_NE(report.find("no flight records in"), std::string::npos) << report;
}

// Dump files are read from a directory anyone may write to: random bytes, a record cut short (a rank killed while
// writing), JSON of the wrong shape, ranks and peers outside the communicator, two ranks that disagree on its size,
// nesting 200,000 deep and a directory named like a record are each skipped with a line naming the file and why;
// nothing crashes, and a communicator is judged on its valid records only.
TEST_F(TraceAnalyzer, GarbageFilesAreSkippedNamingEach) {
  auto write = [&](const std::string& name, const std::string& text) { std::ofstream(dir_ + "/" + name) << text; };
  std::string noise(5000, '\0');
  for (size_t i = 0; i < noise.size(); ++i) noise[i] = static_cast<char>((i * 2654435761u) >> 13);
  write("chorus-trace-00000000000000aa-rank0.json", noise);
  const std::string head = R"({"format": "chorus-flight-record/1", "comm": "aa", )";
  write("cut.json", head + R"("rank": 1, "size": 4, "entries": [{"seq": 1)");
  write("array.json", "[1, 2, 3]");
  write("outside.json", head + R"("rank": 99, "size": 4, "entries": []})");
  write("negative.json", head + R"("rank": -5, "size": 0, "entries": []})");
  write("peer.json", head + R"("rank": 2, "size": 4, "in_flight_peers": [{"peer": 7, "sent": 0, "to_send": 1, )" +
                         R"("received": 0, "to_receive": 1}], "entries": []})");
  write("a_valid.json", head + R"("rank": 3, "size": 4, "entries": []})");
  write("resized.json", head + R"("rank": 0, "size": 8, "entries": []})");
  write("deep.json", std::string(200000, '[') + std::string(200000, ']'));
  std::filesystem::create_directories(dir_ + "/dir.json");
  const std::string report = runTool(dir_);
  for (const char* file : {"rank0.json", "cut.json", "array.json", "outside.json", "negative.json", "peer.json",
                           "resized.json", "deep.json", "dir.json"})
    EXPECT_NE(report.find(std::string("skipped ") + dir_ + "/" +
                          (file[0] == 'r' && file[1] == 'a' ? "chorus-trace-00000000000000aa-" : "") + file),
              std::string::npos)
        << file << "\n"
        << report;
  EXPECT_NE(report.find("rank 99 is outside the communicator's 4 ranks"), std::string::npos) << report;
  EXPECT_NE(report.find("in-flight peer 7 is outside"), std::string::npos) << report;
  EXPECT_NE(report.find("communicator aa: 4 ranks"), std::string::npos) << report;  // judged on a_valid.json
}

}  // namespace
}  // namespace chorus::testing

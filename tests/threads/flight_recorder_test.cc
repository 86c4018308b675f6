// The flight recorder and the metrics: the ring keeps the last N entries whole; every rank records each call with
// its arguments, algorithm, prediction and state, and writes them on request; metrics count calls, bytes and time
// per collective and algorithm, and come out as Prometheus text and JSON.
#include "observe/flight_recorder.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "chorus/communicator.hpp"
#include "core/settings.hpp"
#include "tests/support/thread_ranks.hpp"

namespace chorus {
namespace {

using observe::FlightEntry;
using observe::FlightRecorder;
using observe::OpState;
using testing::onThreads;

TEST(FlightRecorder, KeepsTheLastEntriesInOrder) {
  FlightRecorder ring(3);
  std::vector<uint64_t> index;
  for (uint64_t seq = 1; seq <= 5; ++seq) {
    FlightEntry e;
    e.sequence = seq;
    e.count = seq * 10;
    index.push_back(ring.append(e));
  }
  ring.finish(index[4], OpState::kCompleted, 77);
  ring.finish(index[0], OpState::kFailed, 88);  // overwritten since: ignored
  const std::vector<FlightEntry> kept = ring.snapshot();
  ASSERT_EQ(kept.size(), 3u);
  EXPECT_EQ(kept[0].sequence, 3u);
  EXPECT_EQ(kept[1].sequence, 4u);
  EXPECT_EQ(kept[2].sequence, 5u);
  EXPECT_EQ(kept[2].state, OpState::kCompleted);
  EXPECT_EQ(kept[2].endedTick, 77u);
  EXPECT_EQ(kept[2].count, 50u);
  EXPECT_EQ(kept[1].state, OpState::kStarted);
  EXPECT_TRUE(FlightRecorder(0).snapshot().empty());
}

// A reader copying the ring while the writer rewrites it sees whole entries only.
TEST(FlightRecorder, ReadersNeverSeeHalfAnEntry) {
  FlightRecorder ring(4);
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (uint64_t seq = 1; !stop; ++seq) {
      FlightEntry e;
      e.sequence = seq;
      e.count = seq;
      e.payloadBytes = seq;
      e.endedTick = seq;
      ring.append(e);
    }
  });
  for (int i = 0; i < 2000; ++i)
    for (const FlightEntry& e : ring.snapshot()) {
      ASSERT_EQ(e.count, e.sequence);
      ASSERT_EQ(e.payloadBytes, e.sequence);
      ASSERT_EQ(e.endedTick, e.sequence);
    }
  stop = true;
  writer.join();
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(FlightRecorder, EveryRankRecordsItsCallsAndWritesThemOnRequest) {
  const std::string dir = ::testing::TempDir() + "flight_" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  constexpr int kRanks = 3;
  std::vector<std::string> paths(kRanks), prometheus(kRanks), json(kRanks);
  std::vector<std::vector<CallMetrics>> metrics(kRanks);
  onThreads(kRanks, [&](Communicator& comm) {
    const int r = comm.rank(), n = comm.size();
    std::vector<float> a(1000, 1.0f), b(1000 * n);
    for (int i = 0; i < 2; ++i)  // the second runs the bound fast path
      ASSERT_TRUE(comm.allReduce(a.data(), a.data(), a.size(), DataType::kFloat32, RedOp::sum()).isOk());
    ASSERT_TRUE(comm.broadcast(a.data(), a.data(), 7, DataType::kInt32, 2).isOk());
    ASSERT_TRUE(groupStart().isOk());
    ASSERT_TRUE(comm.send(a.data(), 5, DataType::kFloat32, (r + 1) % n).isOk());
    ASSERT_TRUE(comm.recv(b.data(), 5, DataType::kFloat32, (r + n - 1) % n).isOk());
    ASSERT_TRUE(groupEnd().isOk());
    ASSERT_TRUE(comm.allGatherAsync(a.data(), b.data(), a.size(), DataType::kFloat32).wait().isOk());
    ASSERT_TRUE(comm.dumpFlightRecord(dir, &paths[r]).isOk());
    metrics[r] = comm.metrics();
    prometheus[r] = comm.metricsText(MetricsFormat::kPrometheus);
    json[r] = comm.metricsText(MetricsFormat::kJson);
  });
  for (int r = 0; r < kRanks; ++r) {
    const std::string text = readFile(paths[r]);
    SCOPED_TRACE("rank " + std::to_string(r) + ": " + paths[r]);
    EXPECT_NE(text.find("\"rank\": " + std::to_string(r)), std::string::npos);
    EXPECT_NE(text.find("\"reason\": \"request\""), std::string::npos);
    EXPECT_NE(text.find("\"seq\": 2, \"group_index\": 0, \"group_size\": 1, \"collective\": \"AllReduce\", \"count\": "
                        "1000, \"dtype\": \"float\", \"op\": \"sum\""),
              std::string::npos);
    EXPECT_NE(
        text.find("\"collective\": \"Broadcast\", \"count\": 7, \"dtype\": \"int32\", \"op\": \"sum\", \"root\": 2"),
        std::string::npos);
    EXPECT_NE(text.find("\"seq\": 4, \"group_index\": 1, \"group_size\": 2, \"collective\": \"Recv\""),
              std::string::npos);
    EXPECT_NE(text.find("\"seq\": 5, \"group_index\": 0, \"group_size\": 1, \"collective\": \"AllGather\""),
              std::string::npos);
    EXPECT_EQ(text.find("\"state\": \"started\""), std::string::npos);
    EXPECT_EQ(text.find("\"started_ns\": 0"), std::string::npos);
    EXPECT_EQ(text.find("\"seq\": 6"), std::string::npos);

    std::map<std::string, CallMetrics> byCollective;
    for (const CallMetrics& m : metrics[r]) byCollective[m.collective] = m;
    const CallMetrics& ar = byCollective["AllReduce"];
    EXPECT_EQ(ar.calls, 2u);
    EXPECT_EQ(ar.timedCalls, 2u);
    EXPECT_EQ(ar.payloadBytes, 8000u);
    EXPECT_GT(ar.seconds, 0);
    EXPECT_GT(ar.predictedSeconds, 0);
    EXPECT_FALSE(ar.algorithm.empty());
    EXPECT_EQ(byCollective["Broadcast"].calls, 1u);
    EXPECT_EQ(byCollective["Send"].calls, 1u);
    EXPECT_EQ(byCollective["Send"].timedCalls, 0u);  // inside a group: no time of its own
    EXPECT_EQ(byCollective["Recv"].calls, 1u);
    EXPECT_EQ(byCollective["AllGather"].timedCalls, 1u);
    EXPECT_NE(prometheus[r].find("# TYPE chorus_calls_total counter"), std::string::npos);
    EXPECT_NE(prometheus[r].find(",rank=\"" + std::to_string(r) + "\",collective=\"AllReduce\",algorithm=\"" +
                                 ar.algorithm + "\"} 2\n"),
              std::string::npos)
        << prometheus[r];
    EXPECT_NE(json[r].find("{\"collective\": \"AllReduce\", \"algorithm\": \"" + ar.algorithm + "\", \"calls\": 2"),
              std::string::npos)
        << json[r];
  }
  if (!HasFailure()) std::filesystem::remove_all(dir);
}

// A call that ends within its spin writes its entry once, ended; one that waits for its peer is in the record as
// started meanwhile, where a dump on request or SIGUSR1 finds it, and ends as completed.
TEST(FlightRecorder, ACallWaitingForItsPeerIsRecordedAsStarted) {
  const std::string dir = ::testing::TempDir() + "flight_waiting_" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  std::vector<std::unique_ptr<Communicator>> comms;
  ASSERT_TRUE(Communicator::createLocal(2, &comms).isOk());
  float x = 1, y = 2;
  std::thread early([&] { EXPECT_TRUE(comms[0]->allReduce(&x, &x, 1, DataType::kFloat32, RedOp::sum()).isOk()); });
  std::string text;
  for (int i = 0; i < 500 && text.find("\"state\": \"started\"") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::string path;
    ASSERT_TRUE(comms[0]->dumpFlightRecord(dir, &path).isOk());
    text = readFile(path);
  }
  EXPECT_NE(text.find("\"state\": \"started\""), std::string::npos) << text;
  EXPECT_NE(text.find("\"collective\": \"AllReduce\""), std::string::npos) << text;
  ASSERT_TRUE(comms[1]->allReduce(&y, &y, 1, DataType::kFloat32, RedOp::sum()).isOk());
  early.join();
  EXPECT_EQ(x, 3.0f);
  std::string path;
  ASSERT_TRUE(comms[0]->dumpFlightRecord(dir, &path).isOk());
  text = readFile(path);
  EXPECT_EQ(text.find("\"state\": \"started\""), std::string::npos) << text;
  EXPECT_NE(text.find("\"state\": \"completed\""), std::string::npos) << text;
  comms.clear();
  std::filesystem::remove_all(dir);
}

// The traffic counters are the metrics summed by collective: both count every call once, repeated or not, and
// both start again from a reset.
TEST(FlightRecorder, ResetCountersClearsTheMetricsAndTheCounters) {
  onThreads(2, [](Communicator& comm) {
    float x = 1, v[3] = {1, 2, 3};
    ASSERT_TRUE(comm.allReduce(&x, &x, 1, DataType::kFloat32, RedOp::sum()).isOk());
    comm.resetCounters();
    EXPECT_TRUE(comm.metrics().empty());
    EXPECT_EQ(comm.counters().allReduce.calls, 0u);
    for (int i = 0; i < 3; ++i)  // the second and third repeat the bound call
      ASSERT_TRUE(comm.allReduce(&x, &x, 1, DataType::kFloat32, RedOp::sum()).isOk());
    ASSERT_TRUE(comm.broadcast(v, v, 3, DataType::kFloat32, 0).isOk());
    ASSERT_EQ(comm.metrics().size(), 2u);
    const TrafficCounters t = comm.counters();
    EXPECT_EQ(t.allReduce.calls, 3u);
    EXPECT_EQ(t.allReduce.payloadBytes, 12u);
    EXPECT_EQ(t.broadcast.calls, 1u);
    EXPECT_EQ(t.broadcast.payloadBytes, 12u);
    EXPECT_EQ(t.broadcast.wireBytes, comm.rank() == 0 ? 12u : 0u);  // the root sends, the other rank only receives
    EXPECT_EQ(t.allGather.calls, 0u);
    for (const CallMetrics& m : comm.metrics()) {
      const CallCounters& c = m.collective == "AllReduce" ? t.allReduce : t.broadcast;
      EXPECT_EQ(m.calls, c.calls) << m.collective;
      EXPECT_EQ(m.payloadBytes, c.payloadBytes) << m.collective;
      EXPECT_EQ(m.wireBytes, c.wireBytes) << m.collective;
      EXPECT_EQ(m.timedCalls, m.calls) << m.collective;
    }
  });
}

TEST(FlightRecorder, ZeroEntriesRecordsNothingAndBadSettingsAreNamed) {
  setenv("CHORUS_TRACE_ENTRIES", "0", 1);
  reloadSettings();
  const std::string dir = ::testing::TempDir() + "flight_off_" + std::to_string(getpid());
  std::vector<std::string> texts(2);
  onThreads(2, [&](Communicator& comm) {
    float x = 1;
    ASSERT_TRUE(comm.allReduce(&x, &x, 1, DataType::kFloat32, RedOp::sum()).isOk());
    std::string path;
    ASSERT_TRUE(comm.dumpFlightRecord(dir, &path).isOk());
    texts[comm.rank()] = readFile(path);
  });
  for (const std::string& t : texts) EXPECT_NE(t.find("\"entries\": [\n\n]"), std::string::npos) << t;
  setenv("CHORUS_TRACE_ENTRIES", "99999999", 1);
  reloadSettings();
  EXPECT_NE(settingsError().find("CHORUS_TRACE_ENTRIES"), std::string::npos);
  unsetenv("CHORUS_TRACE_ENTRIES");
  reloadSettings();
  std::filesystem::remove_all(dir);
}

TEST(FlightRecorder, SigusrOneWritesEveryCommunicatorsRecord) {
  const std::string dir = ::testing::TempDir() + "flight_signal_" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  setenv("CHORUS_TRACE_DIR", dir.c_str(), 1);
  reloadSettings();
  std::vector<std::unique_ptr<Communicator>> comms;
  ASSERT_TRUE(Communicator::createLocal(2, &comms).isOk());
  unsetenv("CHORUS_TRACE_DIR");
  reloadSettings();
  raise(SIGUSR1);
  size_t files = 0;
  for (int i = 0; i < 500 && files < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    files = 0;
    std::error_code ec;
    for (const auto& f : std::filesystem::directory_iterator(dir, ec)) files += f.path().extension() == ".json";
  }
  EXPECT_EQ(files, 2u) << "SIGUSR1 wrote no record of the two ranks to " << dir;
  comms.clear();
  std::filesystem::remove_all(dir);
}

TEST(FlightRecorder, AnUnwritableDirectoryIsAnError) {
  onThreads(1, [](Communicator& comm) {
    Status st = comm.dumpFlightRecord("/proc/no/such/dir");
    EXPECT_FALSE(st.isOk());
    EXPECT_NE(st.message().find("/proc/no/such/dir"), std::string::npos) << st.message();
    EXPECT_FALSE(comm.dumpFlightRecord("").isOk());
  });
}

}  // namespace
}  // namespace chorus

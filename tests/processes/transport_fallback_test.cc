// A transport that cannot open at run time (UCX whose device vanished, verbs whose port went down) is passed over:
// the ranks connect through the next one in the order of preference, and an INFO line says why. Forced with
// CHORUS_TRANSPORT, the same failure is the init's error. This binary registers a transport of its own that always
// fails to open, most preferred of all.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/log.hpp"
#include "core/settings.hpp"
#include "tests/support/process_ranks.hpp"
#include "transports/registry.hpp"

namespace chorus::transport {

CHORUS_REGISTER_TRANSPORT(unopenable, {.name = "unopenable",
                                       .preference = -1,
                                       .description = "a transport whose device is gone",
                                       .open = [](const Settings&, std::unique_ptr<Transport>*,
                                                  std::string*) { return systemError("its device disappeared"); },
                                       .reaches =
                                           [](const PeerInfo&, const PeerInfo&, std::string* why) {
                                             *why = "is reached through anything";
                                             return true;
                                           }});

}  // namespace chorus::transport

namespace chorus::testing {
namespace {

std::string allReduceIsRight(Communicator& c) {
  std::vector<int32_t> values(1000, c.rank() + 1);
  if (Status st = c.allReduce(values.data(), values.data(), values.size(), DataType::kInt32, RedOp::sum()); !st.isOk())
    return st.message();
  const int32_t want = c.size() * (c.size() + 1) / 2;
  for (int32_t v : values)
    if (v != want) return "AllReduce gave " + std::to_string(v) + ", not " + std::to_string(want);
  return "";
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(TransportFallback, AnUnopenableTransportIsPassedOverWithAnInfoLine) {
  const std::string logs = ::testing::TempDir() + "fallback-" + std::to_string(getpid()) + "-rank";
  auto results = runProcesses(2, "", allReduceIsRight, 60, nullptr, [&](int) {
    setenv("CHORUS_DEBUG", "INFO", 1);
    setenv("CHORUS_DEBUG_SUBSYS", "TRANSPORT", 1);
    setenv("CHORUS_DEBUG_FILE", (logs + "%r.log").c_str(), 1);
    reloadSettings();
    log::reinitialize();
  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(results[r].exitCode, 0) << "rank " << r << ": " << results[r].message;
    const std::string log = readFile(logs + std::to_string(r) + ".log");
    unlink((logs + std::to_string(r) + ".log").c_str());
    EXPECT_NE(log.find("transport unopenable is not used: its device disappeared"), std::string::npos) << log;
    // The peer went to the transport next in line (shm on one machine), not to the one that failed.
    EXPECT_NE(log.find("peer rank " + std::to_string(1 - r)), std::string::npos) << log;
    EXPECT_EQ(log.find(": unopenable,"), std::string::npos) << log;
  }
}

TEST(TransportFallback, ForcedTheFailureIsTheInitsError) {
  auto results = runProcesses(2, "unopenable", allReduceIsRight, 60);
  for (int r = 0; r < 2; ++r) {
    EXPECT_NE(results[r].exitCode, 0) << "rank " << r;
    EXPECT_NE(results[r].message.find("its device disappeared"), std::string::npos) << results[r].message;
    EXPECT_NE(results[r].message.find("CHORUS_TRANSPORT=unopenable"), std::string::npos) << results[r].message;
  }
}

}  // namespace
}  // namespace chorus::testing

// Peer entries read from the bootstrap store: round trip, and every kind of malformed or foreign entry is an error
// naming the field (a bad number used to end the process with an uncaught std::invalid_argument).
#include "comm/peer_info.hpp"

#include <gtest/gtest.h>

namespace chorus {
namespace {

transport::PeerInfo sample() {
  transport::PeerInfo p;
  p.rank = 3;
  p.hostId = "node7/abc";
  p.machineId = "node7/abc";
  p.pid = 4242;
  p.processToken = 18446744073709551615ull;
  p.tcpAddress = "10.0.0.7:4000";
  return p;
}

TEST(PeerInfo, RoundTrips) {
  transport::PeerInfo back;
  ASSERT_TRUE(decodePeerInfo(encodePeerInfo(sample()), 3, &back).isOk());
  EXPECT_EQ(back.rank, 3);
  EXPECT_EQ(back.pid, 4242);
  EXPECT_EQ(back.processToken, 18446744073709551615ull);
  EXPECT_EQ(back.tcpAddress, "10.0.0.7:4000");
}

TEST(PeerInfo, MalformedEntriesAreNamedErrors) {
  const std::string good = encodePeerInfo(sample());
  struct Bad {
    std::string blob;
    const char* says;
  };
  const std::vector<Bad> bad = {
      {"", "fields missing"},
      {"3\nnode7\n", "fields missing"},
      {"x\nnode7/abc\nnode7/abc\n4242\n1\n10.0.0.7:4000", "names rank 'x'"},
      {"99999999999999999999\nnode7/abc\nnode7/abc\n4242\n1\n10.0.0.7:4000", "names rank"},
      {"2\nnode7/abc\nnode7/abc\n4242\n1\n10.0.0.7:4000", "names rank '2'"},  // another rank's entry
      {"3\nnode7/abc\nnode7/abc\n42x\n1\n10.0.0.7:4000", "bad pid '42x'"},
      {"3\nnode7/abc\nnode7/abc\n-1\n1\n10.0.0.7:4000", "bad pid"},
      {"3\nnode7/abc\nnode7/abc\n4242\n-5\n10.0.0.7:4000", "bad process token"},
      {"3\n\nnode7/abc\n4242\n1\n10.0.0.7:4000", "no host id"},
  };
  for (const Bad& b : bad) {
    transport::PeerInfo out;
    Status st = decodePeerInfo(b.blob, 3, &out);
    EXPECT_FALSE(st.isOk()) << b.blob;
    EXPECT_NE(st.message().find(b.says), std::string::npos) << st.message();
  }
}

}  // namespace
}  // namespace chorus

// Peer entries read from the bootstrap store: round trip, and every kind of malformed or foreign entry is an error
// naming the field (a bad number used to end the process with an uncaught std::invalid_argument).
#include "transports/peer_info.hpp"

#include <gtest/gtest.h>

namespace chorus::transport {
namespace {

PeerInfo sample() {
  PeerInfo p;
  p.rank = 3;
  p.hostId = "node7/abc";
  p.machineId = "node7/abc";
  p.pid = 4242;
  p.processToken = 18446744073709551615ull;
  p.cpus = {0, 1, 2, 3, 8};
  p.addresses["tcp"] = "10.0.0.7:4000";
  p.addresses["shm"] = "";
  p.addresses["ucx"] = std::string("\0\n=\xff", 4);  // any bytes
  return p;
}

TEST(PeerInfo, RoundTrips) {
  PeerInfo back;
  ASSERT_TRUE(decodePeerInfo(encodePeerInfo(sample()), 3, &back).isOk());
  EXPECT_EQ(back.rank, 3);
  EXPECT_EQ(back.pid, 4242);
  EXPECT_EQ(back.processToken, 18446744073709551615ull);
  EXPECT_EQ(back.cpus, sample().cpus);
  EXPECT_EQ(back.addresses, sample().addresses);
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
      {"x\nnode7/abc\nnode7/abc\n4242\n1\n0-3\n10.0.0.7:4000", "names rank 'x'"},
      {"99999999999999999999\nnode7/abc\nnode7/abc\n4242\n1\n0-3\n10.0.0.7:4000", "names rank"},
      {"2\nnode7/abc\nnode7/abc\n4242\n1\n0-3\n10.0.0.7:4000", "names rank '2'"},  // another rank's entry
      {"3\nnode7/abc\nnode7/abc\n42x\n1\n0-3\n10.0.0.7:4000", "bad pid '42x'"},
      {"3\nnode7/abc\nnode7/abc\n-1\n1\n0-3\n10.0.0.7:4000", "bad pid"},
      {"3\nnode7/abc\nnode7/abc\n4242\n-5\n0-3\n10.0.0.7:4000", "bad process token"},
      {"3\n\nnode7/abc\n4242\n1\n0-3\n10.0.0.7:4000", "no host id"},
      {"3\nnode7/abc\nnode7/abc\n4242\n1\n0-3\n10.0.0.7:4000", "malformed transport address '10.0.0.7:4000'"},
      {"3\nnode7/abc\nnode7/abc\n4242\n1\n10.0.0.7:4000", "bad CPU list '10.0.0.7:4000'"},  // no CPU list
      {"3\nnode7/abc\nnode7/abc\n4242\n1\n\ntcp=00", "bad CPU list ''"},
      {"3\nnode7/abc\nnode7/abc\n4242\n1\n3-1", "bad CPU list '3-1'"},
      {"3\nnode7/abc\nnode7/abc\n4242\n1\n0-3\nTCP=00", "malformed transport address"},
      {"3\nnode7/abc\nnode7/abc\n4242\n1\n0-3\ntcp=0", "malformed transport address"},
      {"3\nnode7/abc\nnode7/abc\n4242\n1\n0-3\ntcp=zz", "tcp that is not hex"},
      {"3\nnode7/abc\nnode7/abc\n4242\n1\n0-3\ntcp=00\ntcp=01", "names transport tcp twice"},
  };
  for (const Bad& b : bad) {
    PeerInfo out;
    Status st = decodePeerInfo(b.blob, 3, &out);
    EXPECT_FALSE(st.isOk()) << b.blob;
    EXPECT_NE(st.message().find(b.says), std::string::npos) << st.message();
  }
}

}  // namespace
}  // namespace chorus::transport

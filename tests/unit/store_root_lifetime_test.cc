// How long a rendezvous root serves: a rank whose whole exchange with the root (hello, join, its failure, close)
// arrives at once, before any other rank, must not end the root; the ranks that come later still reach it and learn
// the cause. (A root descheduled on a loaded machine saw exactly that and closed its listener, and the other ranks
// waited out their timeout on a refused port.)
#include <gtest/gtest.h>
#include <netinet/in.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "bootstrap/socket.hpp"
#include "bootstrap/store.hpp"
#include "core/deadline.hpp"

namespace chorus::testing {
namespace {

constexpr uint64_t kSecret = 0x5eed5eed5eed5eedull;

// One request of the wire format, header and body.
std::string request(uint32_t op, const std::string& key, const std::string& value, uint64_t sequence) {
  bootstrap::wire::RequestHeader h{op, static_cast<uint32_t>(key.size()), value.size(), sequence};
  std::string bytes(reinterpret_cast<const char*>(&h), sizeof(h));
  return bytes + key + value;
}

TEST(StoreRootLifetime, ARankThatFailsAndLeavesInOnePassDoesNotEndTheRoot) {
  net::Endpoint root;
  ASSERT_TRUE(bootstrap::startStoreServer(htonl(INADDR_LOOPBACK), 0, kSecret, &root).isOk());

  // Rank 2 of 4: hello, join, fail and close in one write, so that the root reads them all in one pass.
  int fd = -1;
  ASSERT_TRUE(net::connectTo(root, Deadline::after(5), &fd).isOk());
  bootstrap::wire::Hello hello{bootstrap::wire::kHelloMagic, kSecret};
  std::string bytes(reinterpret_cast<const char*>(&hello), sizeof(hello));
  bytes += request(bootstrap::wire::kJoin, "space", "2 4", 1);
  bytes += request(bootstrap::wire::kFail, "space", "rank 2 failed its init: a cause", 2);
  ASSERT_TRUE(net::sendAll(fd, bytes.data(), bytes.size(), Deadline::after(5)).isOk());
  net::closeFd(fd);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the root has read it all and dropped the rank

  // Rank 0 comes later: the root still listens and answers its join with rank 2's cause.
  std::unique_ptr<bootstrap::StoreClient> client;
  Status st = bootstrap::StoreClient::connect(root, kSecret, Deadline::after(2), &client);
  ASSERT_TRUE(st.isOk()) << st.message();
  st = client->join("space", 0, 4);
  EXPECT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("rank 2 failed its init: a cause"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace chorus::testing

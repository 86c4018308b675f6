// The rendezvous client against a root that answers slowly: a reply whose first bytes came is read whole, however
// short the caller's wait, so the stream stays in step and the client stays usable. (Agreement polls the store in
// slices of a few milliseconds; a reply split across those slices once left a survivor without its store.)
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "bootstrap/socket.hpp"
#include "bootstrap/store.hpp"
#include "core/deadline.hpp"

namespace chorus::testing {
namespace {

constexpr uint64_t kSecret = 0x0123456789abcdefull;

// A root that answers each request with `value`, its header first and the value `gap` later, as a loaded root
// (or a reply crossing two TCP segments) may.
class SlowRoot {
 public:
  SlowRoot(std::string value, std::chrono::milliseconds gap) : value_(std::move(value)), gap_(gap) {
    EXPECT_TRUE(net::listenOn(htonl(INADDR_LOOPBACK), 0, &listenFd_, &at_).isOk());
    thread_ = std::thread([this] { serve(); });
  }
  ~SlowRoot() {
    thread_.join();
    net::closeFd(listenFd_);
  }
  const net::Endpoint& at() const { return at_; }

 private:
  void serve() {
    int fd = -1;
    if (!net::acceptOne(listenFd_, Deadline::after(10), &fd).isOk()) return;
    bootstrap::wire::Hello hello{};
    Status st = net::recvAll(fd, &hello, sizeof(hello), Deadline::after(10));
    for (int request = 0; st.isOk() && request < 2; ++request) {
      bootstrap::wire::RequestHeader h{};
      st = net::recvAll(fd, &h, sizeof(h), Deadline::after(10));
      std::string body(h.keyBytes + h.valueBytes, '\0');
      if (st.isOk()) st = net::recvAll(fd, body.data(), body.size(), Deadline::after(10));
      bootstrap::wire::ReplyHeader r{bootstrap::wire::kOk, 0, value_.size(), h.sequence};
      if (st.isOk()) st = net::sendAll(fd, &r, sizeof(r), Deadline::after(10));
      std::this_thread::sleep_for(gap_);
      if (st.isOk()) st = net::sendAll(fd, value_.data(), value_.size(), Deadline::after(10));
    }
    net::closeFd(fd);
  }

  std::string value_;
  std::chrono::milliseconds gap_;
  int listenFd_ = -1;
  net::Endpoint at_;
  std::thread thread_;
};

TEST(StoreClient, AReplyThatStartedIsReadWholeUnderAShortTimeout) {
  SlowRoot root("the value", std::chrono::milliseconds(200));
  std::unique_ptr<bootstrap::StoreClient> client;
  ASSERT_TRUE(bootstrap::StoreClient::connect(root.at(), kSecret, Deadline::after(5), &client).isOk());
  for (int request = 0; request < 2; ++request) {
    TimeoutScope slice(0.005);  // as agreement's slices: far shorter than the gap inside the reply
    std::string value;
    Status st = client->get("key", &value, Deadline::after(5));
    ASSERT_TRUE(st.isOk()) << "request " << request << ": " << st.message();
    EXPECT_EQ(value, "the value");
  }
}

}  // namespace
}  // namespace chorus::testing

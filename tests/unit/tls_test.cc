// TLS on chorus's own sockets (bootstrap/tls.hpp): what a peer receives is what was sent, and a relay on the path
// sees none of it in the clear (it does without a key: the check can fail); a peer with another key, or without
// TLS, ends in an error on both sides within the deadline, not a hang; a short key is refused.
#include "bootstrap/tls.hpp"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/socket.hpp"

namespace chorus::net {
namespace {

const char* const kKey = "a test key of more than thirty-two bytes, for TLS";
const char* const kOtherKey = "another test key, also longer than thirty-two bytes";
const std::string kMarker = "chorus-plaintext-marker-";

// Accepts one connection, dials `target` and forwards both ways until either side closes, keeping every byte that
// passed: what a listener on the path sees. Plain sockets throughout (the relay holds no key).
class Relay {
 public:
  explicit Relay(const Endpoint& target) {
    EXPECT_TRUE(listenOn(localAddress(), 0, &listenFd_, &bound_).isOk());
    thread_ = std::thread([this, target] { run(target); });
  }
  ~Relay() {
    if (thread_.joinable()) thread_.join();
    closeFd(listenFd_);
  }
  const Endpoint& endpoint() const { return bound_; }
  /// Every byte that passed, once both ends closed.
  std::string finish() {
    thread_.join();
    return seen_;
  }

 private:
  void run(const Endpoint& target) {
    pollfd p{listenFd_, POLLIN, 0};
    if (poll(&p, 1, 10000) <= 0) return;
    const int client = accept(listenFd_, nullptr, nullptr);
    const int server = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = target.ip;
    addr.sin_port = htons(target.port);
    if (client >= 0 && connect(server, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
      char buf[65536];
      for (bool open = true; open;) {
        pollfd fds[2] = {{client, POLLIN, 0}, {server, POLLIN, 0}};
        if (poll(fds, 2, 10000) <= 0) break;
        for (int i = 0; i < 2 && open; ++i) {
          if (fds[i].revents == 0) continue;
          const ssize_t n = ::recv(fds[i].fd, buf, sizeof(buf), 0);
          open = n > 0 && ::send(fds[1 - i].fd, buf, static_cast<size_t>(n), MSG_NOSIGNAL) == n;
          if (n > 0) seen_.append(buf, static_cast<size_t>(n));
        }
      }
    }
    if (client >= 0) ::close(client);
    ::close(server);
  }

  int listenFd_ = -1;
  Endpoint bound_;
  std::string seen_;
  std::thread thread_;
};

std::string markedText(size_t bytes) {
  std::string out;
  for (size_t i = 0; out.size() < bytes; ++i) out += kMarker + std::to_string(i) + ";";
  out.resize(bytes);
  return out;
}

// Sends `bytes` of marked text through a relay to a server that echoes it, checks the echo, and returns what the
// relay saw.
std::string echoThroughRelay(size_t bytes) {
  int listenFd = -1;
  Endpoint server;
  EXPECT_TRUE(listenOn(localAddress(), 0, &listenFd, &server).isOk());
  std::thread echo([&] {
    int fd = -1;
    Status st = acceptOne(listenFd, Deadline::after(10), &fd);
    std::string got(bytes, '\0');
    if (st.isOk()) st = recvAll(fd, got.data(), got.size(), Deadline::after(10));
    if (st.isOk()) st = sendAll(fd, got.data(), got.size(), Deadline::after(10));
    EXPECT_TRUE(st.isOk()) << "server: " << st.message();
    char end;
    (void)recvAll(fd, &end, 1, Deadline::after(10));  // until the client closes: then the relay ends
    closeFd(fd);
  });
  Relay relay(server);
  const std::string sent = markedText(bytes);
  std::string back(bytes, '\0');
  int fd = -1;
  Status st = connectTo(relay.endpoint(), Deadline::after(10), &fd);
  if (st.isOk()) st = sendAll(fd, sent.data(), sent.size(), Deadline::after(10));
  if (st.isOk()) st = recvAll(fd, back.data(), back.size(), Deadline::after(10));
  EXPECT_TRUE(st.isOk()) << "client: " << st.message();
  EXPECT_TRUE(back == sent) << "the echo differs from what was sent";
  closeFd(fd);
  echo.join();
  closeFd(listenFd);
  return relay.finish();
}

TEST(Tls, BytesArriveWholeAndNoneIsReadableOnTheWire) {
  ASSERT_TRUE(tls::built()) << "this build has no OpenSSL 3";
  ASSERT_TRUE(tls::setKey(kKey).isOk());
  ASSERT_TRUE(tls::enabled());
  const size_t bytes = 3 << 20;
  const std::string seen = echoThroughRelay(bytes);
  EXPECT_GT(seen.size(), 2 * bytes) << "both directions, with the records' overhead";
  EXPECT_EQ(seen.find(kMarker), std::string::npos) << "plaintext on the wire";
}

TEST(Tls, WithoutAKeyTheRelaySeesThePlaintext) {
  ASSERT_TRUE(tls::setKey(nullptr).isOk());
  EXPECT_FALSE(tls::enabled());
  const std::string seen = echoThroughRelay(1 << 20);
  EXPECT_EQ(seen.size(), 2u << 20);
  EXPECT_NE(seen.find(kMarker), std::string::npos);
}

// A server in a child process with `serverKey` (nullptr: plaintext) accepts one connection; the client here dials
// it with `clientKey`. Both must fail within the deadline; the child's exit code says whether its error was the
// handshake's. Returns the client's error.
Status mismatchedPeers(const char* serverKey, const char* clientKey) {
  int listenFd = -1;
  Endpoint server;
  EXPECT_TRUE(listenOn(localAddress(), 0, &listenFd, &server).isOk());
  const pid_t pid = fork();
  if (pid == 0) {
    if (!tls::setKey(serverKey).isOk()) _exit(3);
    int fd = -1;
    Status st = acceptOne(listenFd, Deadline::after(10), &fd);
    if (st.isOk() && !serverKey) {
      // A plaintext server takes the client's handshake for data: it gets a TLS record, not a hello, and closes.
      char hello[8];
      st = recvAll(fd, hello, sizeof(hello), Deadline::after(10));
      closeFd(fd);
      _exit(st.isOk() && memcmp(hello, "\x16\x03", 2) == 0 ? 0 : 4);
    }
    _exit(!st.isOk() && st.message().find("TLS handshake") != std::string::npos ? 0 : 5);
  }
  closeFd(listenFd);
  EXPECT_TRUE(tls::setKey(clientKey).isOk());
  const auto start = std::chrono::steady_clock::now();
  int fd = -1;
  Status st = connectTo(server, Deadline::after(10), &fd);
  if (st.isOk() && !clientKey) {
    // A plaintext client says hello; the TLS server takes it for a bad handshake and closes.
    st = sendAll(fd, "not TLS, a hello of a plaintext peer", 36, Deadline::after(10));
    char reply;
    if (st.isOk()) st = recvAll(fd, &reply, 1, Deadline::after(10));
  }
  closeFd(fd);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  int status = 0;
  EXPECT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "server exit status " << status;
  return st;
}

TEST(Tls, PeersWithDifferentKeysFailTheHandshake) {
  const Status st = mismatchedPeers(kOtherKey, kKey);
  ASSERT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("TLS handshake"), std::string::npos) << st.message();
}

TEST(Tls, ATlsClientAndAPlaintextServerRefuseEachOther) {
  const Status st = mismatchedPeers(nullptr, kKey);
  ASSERT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("TLS handshake"), std::string::npos) << st.message();
}

TEST(Tls, APlaintextClientAndATlsServerRefuseEachOther) {
  const Status st = mismatchedPeers(kKey, nullptr);
  ASSERT_FALSE(st.isOk()) << "the TLS server should close the connection of a plaintext peer";
}

TEST(Tls, AShortKeyIsRefused) {
  const Status st = tls::setKey("thirty-one bytes, one too short");
  ASSERT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("at least 32"), std::string::npos) << st.message();
  EXPECT_FALSE(tls::enabled());
}

}  // namespace
}  // namespace chorus::net

#include "transports/tcp/acceptor.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>

#include "bootstrap/socket.hpp"
#include "bootstrap/tls.hpp"
#include "core/log.hpp"

namespace chorus::transport::tcp {
namespace {

using Clock = std::chrono::steady_clock;

// A connection silent this long is taken for a stray one when descriptors run out (a rank's hello follows its
// connect() within microseconds).
constexpr auto kStrayAfter = std::chrono::milliseconds(100);
// How often the wait asks whether another rank's setup failed (one store round trip).
constexpr auto kSetupCheckEvery = std::chrono::milliseconds(250);

struct Pending {
  int fd = -1;
  Clock::time_point helloBy;
  Hello hello{};
  size_t got = 0;
  bool handshaking = false;  // a TLS handshake comes before the hello
};

std::string missing(const Expected& e, const std::vector<std::vector<int>>& fds) {
  std::string out;
  for (size_t i = 0; i < e.peers.size(); ++i) {
    int absent = static_cast<int>(std::count(fds[i].begin(), fds[i].end(), -1));
    if (absent == 0) continue;
    if (!out.empty()) out += ", ";
    out += "rank " + std::to_string(e.peers[i]) + " (" + std::to_string(absent) + " of " +
           std::to_string(e.socketsPerPeer) + " sockets)";
  }
  return out;
}

}  // namespace

Status acceptPeers(int listenFd, const Expected& e, const Deadline& deadline,
                   const std::function<Status()>& setupFailed, std::vector<std::vector<int>>* fds) {
  int expected = static_cast<int>(e.peers.size()) * e.socketsPerPeer;
  std::vector<Pending> pending;
  auto closeAll = [&] {
    for (auto& p : pending) net::closeFd(p.fd);
  };
  net::setNonBlocking(listenFd);
  auto nextSetupCheck = Clock::now() + kSetupCheckEvery;
  auto acceptPausedUntil = Clock::time_point{};
  bool ranOutOfDescriptors = false;
  std::vector<pollfd> polled;
  while (expected > 0) {
    if (deadline.expired()) {
      closeAll();
      std::string why = "tcp: rank " + std::to_string(e.rank) + " waited for connections from " + missing(e, *fds);
      if (ranOutOfDescriptors) why += "; accepting ran out of file descriptors (raise ulimit -n)";
      return deadline.cancelled() ? remoteError(why + ": cancelled") : timeoutError(why + " until the timeout");
    }
    if (Clock::now() >= nextSetupCheck) {
      nextSetupCheck = Clock::now() + kSetupCheckEvery;
      if (Status failed = setupFailed(); !failed.isOk()) {
        closeAll();
        return failed;
      }
    }
    polled.clear();
    polled.push_back({Clock::now() >= acceptPausedUntil ? listenFd : -1, POLLIN, 0});
    for (auto& p : pending) polled.push_back({p.fd, POLLIN, 0});
    if (poll(polled.data(), polled.size(), std::min(deadline.remainingMs(), 50)) < 0 && errno != EINTR)
      return systemError(std::string("tcp accept: poll: ") + strerror(errno));

    // Handshakes that made progress, complete or late.
    const auto now = Clock::now();
    for (size_t j = 0; j < pending.size(); ++j) {
      Pending& p = pending[j];
      if (polled[j + 1].revents != 0 && p.handshaking) {
        bool done = false;
        if (Status st = net::tls::handshakeStep(p.fd, net::tls::Role::kServer, &done); !st.isOk()) {
          CHORUS_WARN(kTransport, "tcp: refused a connection: %s", st.message().c_str());
          net::closeFd(p.fd);
          continue;
        }
        p.handshaking = !done;
      }
      // Read until the hello is whole or the socket is empty: a TLS session may hold bytes poll() does not show.
      while (polled[j + 1].revents != 0 && !p.handshaking && p.got < sizeof(Hello)) {
        ssize_t n = net::tls::recv(p.fd, reinterpret_cast<char*>(&p.hello) + p.got, sizeof(Hello) - p.got);
        if (n > 0) {
          p.got += static_cast<size_t>(n);
          continue;
        }
        if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) net::closeFd(p.fd);
        break;  // closed above when it went away before it said who it is
      }
      if (p.fd < 0) continue;
      if (p.got == sizeof(Hello)) {
        const Hello& h = p.hello;
        auto it = std::find(e.peers.begin(), e.peers.end(), h.rank);
        const size_t slot = static_cast<size_t>(it - e.peers.begin());
        const bool valid = h.magic == kHelloMagic && h.commHash == e.commHash && it != e.peers.end() &&
                           h.rank > e.rank && h.socketIndex >= 0 && h.socketIndex < e.socketsPerPeer &&
                           (*fds)[slot][h.socketIndex] < 0;
        if (valid) {
          (*fds)[slot][h.socketIndex] = p.fd;
          p.fd = -1;
          --expected;
        } else {
          CHORUS_WARN(kTransport, "tcp: refused a connection that did not present a valid handshake");
          net::closeFd(p.fd);
        }
      } else if (now >= p.helloBy) {
        CHORUS_WARN(kTransport, "tcp: closed a connection that sent no handshake within a second");
        net::closeFd(p.fd);
      }
    }
    std::erase_if(pending, [](const Pending& p) { return p.fd < 0; });

    if (polled[0].fd < 0 || polled[0].revents == 0) continue;
    while (true) {
      int fd = accept4(listenFd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd >= 0) {
        net::setNoDelay(fd);
        pending.push_back({fd, Clock::now() + net::kHelloWithin, {}, 0, net::tls::enabled()});
        continue;
      }
      if (errno == EMFILE || errno == ENFILE) {
        // Room comes from a stray connection closing (the oldest one that has not said hello) or from time.
        ranOutOfDescriptors = true;
        auto stray = std::find_if(pending.begin(), pending.end(), [](const Pending& p) {
          return p.got == 0 && Clock::now() > p.helloBy - net::kHelloWithin + kStrayAfter;
        });
        if (stray != pending.end()) {
          net::closeFd(stray->fd);
          pending.erase(stray);
        }
        acceptPausedUntil = Clock::now() + net::kAcceptBackoff;
      } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED) {
        closeAll();
        return systemError(std::string("tcp accept: ") + strerror(errno));
      }
      break;
    }
  }
  closeAll();  // connections still silent when every peer has arrived are strays
  return Status::ok();
}

}  // namespace chorus::transport::tcp

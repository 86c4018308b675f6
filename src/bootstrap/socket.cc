#include "bootstrap/socket.hpp"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <thread>

#include "bootstrap/settings.hpp"
#include "bootstrap/tls.hpp"

namespace chorus::net {

std::string Endpoint::toString() const {
  char buf[INET_ADDRSTRLEN] = {0};
  in_addr a{};
  a.s_addr = ip;
  inet_ntop(AF_INET, &a, buf, sizeof(buf));
  return std::string(buf) + ":" + std::to_string(port);
}

Status Endpoint::parse(const std::string& hostPort, Endpoint* out) {
  auto colon = hostPort.rfind(':');
  if (colon == std::string::npos) return invalidArgument("address '" + hostPort + "' is not host:port");
  std::string host = hostPort.substr(0, colon);
  long port = strtol(hostPort.c_str() + colon + 1, nullptr, 10);
  if (port <= 0 || port > 65535) return invalidArgument("address '" + hostPort + "' has no valid port");
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0 || !res) {
    return invalidArgument("cannot resolve host '" + host + "'");
  }
  out->ip = reinterpret_cast<sockaddr_in*>(res->ai_addr)->sin_addr.s_addr;
  out->port = static_cast<uint16_t>(port);
  freeaddrinfo(res);
  return Status::ok();
}

uint32_t localAddress() {
  const std::string& forced = settings()[bootstrap::kSocketAddr];
  if (!forced.empty()) {
    in_addr a{};
    if (inet_pton(AF_INET, forced.c_str(), &a) == 1) return a.s_addr;
  }
  uint32_t found = htonl(INADDR_LOOPBACK);
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) == 0) {
    for (ifaddrs* it = list; it; it = it->ifa_next) {
      if (!it->ifa_addr || it->ifa_addr->sa_family != AF_INET) continue;
      if ((it->ifa_flags & IFF_UP) == 0 || (it->ifa_flags & IFF_LOOPBACK) != 0) continue;
      found = reinterpret_cast<sockaddr_in*>(it->ifa_addr)->sin_addr.s_addr;
      break;
    }
    freeifaddrs(list);
  }
  return found;
}

static std::string errnoText(const char* what) { return std::string(what) + ": " + strerror(errno); }

Status listenOn(uint32_t ip, uint16_t port, int* fd, Endpoint* bound) {
  int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return systemError(errnoText("socket"));
  int one = 1;
  setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = ip;
  addr.sin_port = htons(port);
  if (bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    Status st = systemError(errnoText(("bind " + Endpoint{ip, port}.toString()).c_str()));
    close(s);
    return st;
  }
  if (listen(s, 1024) != 0) {
    close(s);
    return systemError(errnoText("listen"));
  }
  socklen_t len = sizeof(addr);
  getsockname(s, reinterpret_cast<sockaddr*>(&addr), &len);
  bound->ip = ip;
  bound->port = ntohs(addr.sin_port);
  *fd = s;
  return Status::ok();
}

Status connectTo(const Endpoint& to, const Deadline& deadline, int* fd, bool retryRefused) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = to.ip;
  addr.sin_port = htons(to.port);
  int delayMs = 1;
  while (true) {
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0) return systemError(errnoText("socket"));
    if (connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
      setNoDelay(s);
      if (tls::enabled()) {
        if (Status st = tls::handshake(s, tls::Role::kClient, deadline); !st.isOk()) {
          closeFd(s);
          return st;
        }
      }
      *fd = s;
      return Status::ok();
    }
    int err = errno;
    close(s);
    if ((err != ECONNREFUSED || !retryRefused) && err != ETIMEDOUT && err != EAGAIN && err != EINTR) {
      errno = err;
      return systemError(errnoText(("connect to " + to.toString()).c_str()));
    }
    if (deadline.expired()) return timeoutError("no listener at " + to.toString() + " before the timeout");
    std::this_thread::sleep_for(std::chrono::milliseconds(delayMs));
    delayMs = delayMs < 100 ? delayMs * 2 : 100;
  }
}

Status acceptOne(int listenFd, const Deadline& deadline, int* fd) {
  while (true) {
    pollfd p{listenFd, POLLIN, 0};
    int r = poll(&p, 1, deadline.remainingMs());
    if (r < 0 && errno != EINTR) return systemError(errnoText("poll"));
    if (r == 0 && deadline.expired()) return timeoutError("no peer connected before the timeout");
    if (r > 0) {
      int s = accept4(listenFd, nullptr, nullptr, SOCK_CLOEXEC);
      if (s >= 0) {
        setNoDelay(s);
        if (tls::enabled()) {
          if (Status st = tls::handshake(s, tls::Role::kServer, deadline); !st.isOk()) {
            closeFd(s);
            return st;
          }
        }
        *fd = s;
        return Status::ok();
      }
      if (errno != EINTR && errno != EAGAIN && errno != ECONNABORTED) return systemError(errnoText("accept"));
    }
  }
}

Status sendAll(int fd, const void* data, size_t bytes, const Deadline& deadline) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    ssize_t n = tls::send(fd, p, bytes);
    if (n > 0) {
      p += n;
      bytes -= static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      return remoteError(errnoText("send"));
    }
    pollfd pf{fd, POLLOUT, 0};
    if (poll(&pf, 1, deadline.remainingMs()) == 0 && deadline.expired()) return timeoutError("send timed out");
  }
  return Status::ok();
}

Status recvAll(int fd, void* data, size_t bytes, const Deadline& deadline) {
  char* p = static_cast<char*>(data);
  while (bytes > 0) {
    ssize_t n = tls::recv(fd, p, bytes);
    if (n > 0) {
      p += n;
      bytes -= static_cast<size_t>(n);
      continue;
    }
    if (n == 0) return remoteError("connection closed by peer");
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return remoteError(errnoText("recv"));
    pollfd pf{fd, POLLIN, 0};
    if (poll(&pf, 1, deadline.remainingMs()) == 0 && deadline.expired()) return timeoutError("recv timed out");
  }
  return Status::ok();
}

Status reserveDescriptors(size_t more, const std::string& what) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return Status::ok();
  size_t open = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (readdir(d)) ++open;
    closedir(d);
  }
  const rlim_t needed = static_cast<rlim_t>(open + more + 16);  // 16: what the process may open meanwhile
  const rlim_t soft = limit.rlim_cur;
  if (soft != RLIM_INFINITY && soft < needed) {
    if (limit.rlim_max == RLIM_INFINITY || limit.rlim_max >= needed) {
      limit.rlim_cur = needed;
      if (setrlimit(RLIMIT_NOFILE, &limit) == 0) return Status::ok();
    }
    return systemError(what + " needs " + std::to_string(more) + " more file descriptors, and " + std::to_string(open) +
                       " of the limit of " + std::to_string(soft) + " are open (ulimit -n; the hard limit is " +
                       (limit.rlim_max == RLIM_INFINITY ? std::string("unlimited") : std::to_string(limit.rlim_max)) +
                       ")");
  }
  return Status::ok();
}

void setNonBlocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

void setNoDelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

bool isLocalPath(int fd) {
  sockaddr_in local{}, peer{};
  socklen_t localLen = sizeof(local), peerLen = sizeof(peer);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &localLen) != 0 ||
      getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peerLen) != 0) {
    return false;
  }
  return local.sin_family == AF_INET && peer.sin_family == AF_INET && local.sin_addr.s_addr == peer.sin_addr.s_addr;
}

Status setCongestionControl(int fd, const std::string& algorithm) {
  if (setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, algorithm.data(), static_cast<socklen_t>(algorithm.size())) != 0) {
    return invalidUsage("tcp congestion control '" + algorithm + "': " + strerror(errno) +
                        " (see /proc/sys/net/ipv4/tcp_allowed_congestion_control)");
  }
  return Status::ok();
}

void closeFd(int& fd) {
  if (fd >= 0) {
    tls::release(fd);
    close(fd);
  }
  fd = -1;
}

}  // namespace chorus::net

// The store server: one thread, poll() over the listening socket and every client. A client must first send the
// hello with the id's secret; anything else (wrong secret, garbage, oversized lengths) closes that connection and
// is logged, and the server goes on serving the others.
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <thread>
#include <vector>

#include "bootstrap/store.hpp"
#include "core/log.hpp"

namespace chorus::bootstrap {
namespace {

struct Client {
  int fd = -1;
  bool authenticated = false;
  std::string inbox;
};

class StoreServer {
 public:
  StoreServer(int listenFd, uint64_t secret) : listenFd_(listenFd), secret_(secret) {}

  void run() {
    std::vector<pollfd> fds;
    while (true) {
      fds.clear();
      fds.push_back({listenFd_, POLLIN, 0});
      for (auto& c : clients_) fds.push_back({c.fd, POLLIN, 0});
      if (poll(fds.data(), fds.size(), -1) < 0) continue;
      if (fds[0].revents & POLLIN) acceptClient();
      // Iterate over a snapshot of fds: serving may close clients.
      for (size_t i = 1; i < fds.size(); ++i) {
        if (fds[i].revents == 0) continue;
        serve(fds[i].fd);
      }
      std::erase_if(clients_, [](const Client& c) { return c.fd < 0; });
    }
  }

 private:
  void acceptClient() {
    int fd = accept4(listenFd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) return;
    net::setNoDelay(fd);
    clients_.push_back(Client{fd, false, {}});
  }

  Client* find(int fd) {
    for (auto& c : clients_)
      if (c.fd == fd) return &c;
    return nullptr;
  }

  void drop(Client& c, const char* why) {
    if (why) CHORUS_WARN(kBootstrap, "store: refused a connection: %s", why);
    for (auto& [key, waiters] : waiters_) std::erase(waiters, c.fd);
    close(c.fd);
    c.fd = -1;
  }

  void serve(int fd) {
    Client* c = find(fd);
    if (!c) return;
    char buf[65536];
    ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n <= 0) {
      if (n == 0 || (errno != EAGAIN && errno != EINTR)) drop(*c, nullptr);
      return;
    }
    c->inbox.append(buf, static_cast<size_t>(n));
    while (c->fd >= 0 && parseOne(*c)) {
    }
  }

  // Handles one complete message from the inbox; returns false when more bytes are needed.
  bool parseOne(Client& c) {
    if (!c.authenticated) {
      if (c.inbox.size() < sizeof(wire::Hello)) return false;
      wire::Hello hello;
      memcpy(&hello, c.inbox.data(), sizeof(hello));
      if (hello.magic != wire::kHelloMagic || hello.secret != secret_) {
        drop(c, "bad handshake (not a chorus peer of this communicator)");
        return false;
      }
      c.authenticated = true;
      c.inbox.erase(0, sizeof(hello));
      return true;
    }
    if (c.inbox.size() < sizeof(wire::RequestHeader)) return false;
    wire::RequestHeader h;
    memcpy(&h, c.inbox.data(), sizeof(h));
    if (h.keyBytes > wire::kMaxKey || h.valueBytes > wire::kMaxValue || h.op < wire::kSet || h.op > wire::kAdd) {
      drop(c, "malformed request");
      return false;
    }
    size_t total = sizeof(h) + h.keyBytes + h.valueBytes;
    if (c.inbox.size() < total) return false;
    std::string key = c.inbox.substr(sizeof(h), h.keyBytes);
    std::string value = c.inbox.substr(sizeof(h) + h.keyBytes, h.valueBytes);
    c.inbox.erase(0, total);
    handle(c, h.op, key, value);
    return true;
  }

  void handle(Client& c, uint32_t op, const std::string& key, const std::string& value) {
    if (op == wire::kSet) {
      data_[key] = value;
      reply(c.fd, "");
      auto it = waiters_.find(key);
      if (it != waiters_.end()) {
        for (int w : it->second) reply(w, value);
        waiters_.erase(it);
      }
    } else if (op == wire::kGet) {
      auto it = data_.find(key);
      if (it != data_.end())
        reply(c.fd, it->second);
      else
        waiters_[key].push_back(c.fd);
    } else {
      int64_t delta = 0, current = 0;
      if (value.size() == sizeof(delta)) memcpy(&delta, value.data(), sizeof(delta));
      auto& stored = data_[key];
      if (stored.size() == sizeof(current)) memcpy(&current, stored.data(), sizeof(current));
      current += delta;
      stored.assign(reinterpret_cast<const char*>(&current), sizeof(current));
      reply(c.fd, stored);
    }
  }

  void reply(int fd, const std::string& value) {
    wire::ReplyHeader h{value.size()};
    Deadline d = Deadline::after(10);
    if (!net::sendAll(fd, &h, sizeof(h), d).isOk() || !net::sendAll(fd, value.data(), value.size(), d).isOk()) {
      if (Client* c = find(fd)) drop(*c, "client stopped reading replies");
    }
  }

  int listenFd_;
  uint64_t secret_;
  std::vector<Client> clients_;
  std::map<std::string, std::string> data_;
  std::map<std::string, std::vector<int>> waiters_;
};

}  // namespace

Status startStoreServer(uint32_t ip, uint16_t port, uint64_t secret, net::Endpoint* bound) {
  int fd = -1;
  CHORUS_TRY(net::listenOn(ip, port, &fd, bound));
  std::thread([fd, secret] {
    StoreServer server(fd, secret);
    server.run();
  }).detach();
  CHORUS_INFO(kBootstrap, "store root listening on %s", bound->toString().c_str());
  return Status::ok();
}

}  // namespace chorus::bootstrap

#include "bootstrap/id_handoff.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "bootstrap/socket.hpp"
#include "core/deadline.hpp"

namespace chorus::bootstrap {

IdHandoff::~IdHandoff() { close(); }

Status IdHandoff::open() {
  // Datagram-like: every child that receives takes one whole copy, however the reads interleave.
  int ends[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ends) != 0)
    return systemError("id handoff: socketpair: " + std::string(strerror(errno)));
  parentEnd_ = ends[0];
  childEnd_ = ends[1];
  return Status::ok();
}

Status IdHandoff::receive(UniqueId* id) {
  net::closeFd(parentEnd_);  // so that the parent's close (or death) reads as the end here
  const Deadline deadline = Deadline::fromSettings();
  while (true) {
    pollfd p{childEnd_, POLLIN, 0};
    const int ready = poll(&p, 1, deadline.remainingMs());
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return systemError("id handoff: poll: " + std::string(strerror(errno)));
    if (ready == 0 && deadline.expired())
      return timeoutError("no communicator id from the launching process (pid " + std::to_string(getppid()) +
                          ") within CHORUS_TIMEOUT");
    if (ready == 0) continue;
    const ssize_t got = recv(childEnd_, id->bytes.data(), id->bytes.size(), 0);
    if (got < 0 && errno == EINTR) continue;
    net::closeFd(childEnd_);
    if (got == static_cast<ssize_t>(id->bytes.size())) return Status::ok();
    return systemError("the launching process gave no communicator id (it failed to make one, or ended)");
  }
}

Status IdHandoff::handOver(const std::function<Status(UniqueId*)>& make, int children) {
  net::closeFd(childEnd_);
  UniqueId id;
  Status st = make(&id);
  for (int c = 0; st.isOk() && c < children; ++c) {
    if (::send(parentEnd_, id.bytes.data(), id.bytes.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(id.bytes.size()))
      st = systemError("id handoff: send: " + std::string(strerror(errno)));
  }
  close();
  return st;
}

void IdHandoff::close() {
  net::closeFd(parentEnd_);
  net::closeFd(childEnd_);
}

}  // namespace chorus::bootstrap

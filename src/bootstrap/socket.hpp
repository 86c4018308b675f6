// Thin helpers over POSIX TCP sockets: listen, connect with retry, and whole-buffer send/recv bounded by a deadline.
#pragma once

#include <netinet/in.h>

#include <chrono>
#include <cstddef>
#include <string>

#include "chorus/status.hpp"
#include "core/deadline.hpp"

namespace chorus::net {

/// An IPv4 endpoint.
struct Endpoint {
  uint32_t ip = 0;    // network byte order
  uint16_t port = 0;  // host byte order
  std::string toString() const;
  static Status parse(const std::string& hostPort, Endpoint* out);
};

/// The address this host advertises: CHORUS_SOCKET_ADDR, else the first non-loopback IPv4 interface, else 127.0.0.1.
uint32_t localAddress();

/// Listeners that face the network (the rendezvous root, a rank's tcp listener): a chorus peer sends its hello
/// right after connect(), so a connection silent for kHelloWithin holds a descriptor for nothing and is closed; after
/// accept() failed for want of descriptors, the listener is left alone for kAcceptBackoff (it stays readable, and
/// polling it again at once would spin).
inline constexpr std::chrono::milliseconds kHelloWithin{1000};
inline constexpr std::chrono::milliseconds kAcceptBackoff{50};

/// Opens a listening socket on `ip`:`port` (port 0 = any). Writes the bound endpoint.
Status listenOn(uint32_t ip, uint16_t port, int* fd, Endpoint* bound);
/// Connects, retrying refused connections until the deadline (the listener may not be up yet) unless
/// `retryRefused` is false (the listener is known to be up: a refusal means it is gone).
Status connectTo(const Endpoint& to, const Deadline& deadline, int* fd, bool retryRefused = true);
/// Accepts one connection before the deadline.
Status acceptOne(int listenFd, const Deadline& deadline, int* fd);

Status sendAll(int fd, const void* data, size_t bytes, const Deadline& deadline);
Status recvAll(int fd, void* data, size_t bytes, const Deadline& deadline);

/// Makes room for `more` descriptors beyond those open: raises the soft RLIMIT_NOFILE up to the hard one when
/// needed; the error names the limit. `what` says what they are for.
Status reserveDescriptors(size_t more, const std::string& what);

void setNonBlocking(int fd);
void setNoDelay(int fd);
/// True when both ends of the connected socket have the same address: its traffic never leaves this host.
bool isLocalPath(int fd);
/// Sets the socket's congestion-control algorithm (TCP_CONGESTION); the error names the algorithm.
Status setCongestionControl(int fd, const std::string& algorithm);
void closeFd(int& fd);

}  // namespace chorus::net

// Opening another process's memfd through /proc/<pid>/fd/<n>: how the shm FIFOs and the shareable buffers
// (transports/peer_blocks.hpp) are shared. The descriptor number comes from the peer, so the file is checked before
// it is used: its memfd name must start with `name` and its size must be `bytes`.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "chorus/status.hpp"

namespace chorus::transport {

/// Opens `pid`'s descriptor `peerFd` with `flags` (O_RDONLY or O_RDWR) into *out; `whose` names it in errors
/// ("rank 3's shared memory ").
inline Status openPeerMemfd(int pid, long peerFd, const std::string& name, size_t bytes, int flags,
                            const std::string& whose, int* out) {
  const std::string path = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(peerFd);
  char target[256] = {0};
  const ssize_t n = readlink(path.c_str(), target, sizeof(target) - 1);
  if (n < 0) return remoteError("cannot open " + whose + path + ": " + strerror(errno) + " (is it alive?)");
  if (std::string(target, static_cast<size_t>(n)).rfind("/memfd:" + name + " ", 0) != 0)
    return remoteError(path + " is not " + whose + name);
  const int fd = open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) return systemError("cannot open " + whose + path + ": " + strerror(errno));
  struct stat info {};
  if (fstat(fd, &info) != 0 || static_cast<size_t>(info.st_size) != bytes) {
    close(fd);
    return remoteError(whose + name + " does not have the agreed size");
  }
  *out = fd;
  return Status::ok();
}

}  // namespace chorus::transport

#include "transports/peer_blocks.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "transports/peer_memfd.hpp"

namespace chorus::transport {

PeerBlocks::~PeerBlocks() {
  for (const Mapped& m : mapped_) unmap(m);
}

void PeerBlocks::unmap(const Mapped& m) { munmap(const_cast<std::byte*>(m.address), m.bytes); }

Status PeerBlocks::map(const BlockRange& range, const Mapped** out) {
  for (const Mapped& m : mapped_) {
    if (m.id == range.blockId) {
      *out = &m;
      return Status::ok();
    }
  }
  // The same descriptor number with another block: the peer freed the old one, whose memory only this mapping
  // still holds.
  auto stale = [&](const Mapped& m) { return m.fd == range.fd; };
  for (const Mapped& m : mapped_)
    if (stale(m)) unmap(m);
  mapped_.erase(std::remove_if(mapped_.begin(), mapped_.end(), stale), mapped_.end());
  if (mapped_.size() >= kMaxBlocks) {
    unmap(mapped_.front());
    mapped_.erase(mapped_.begin());
  }
  const std::string whose = "rank " + std::to_string(peerRank_) + "'s buffer ";
  int fd = -1;
  CHORUS_TRY(
      openPeerMemfd(peerPid_, static_cast<long>(range.fd), kShareableName, range.blockBytes, O_RDONLY, whose, &fd));
  void* address = mmap(nullptr, range.blockBytes, PROT_READ, MAP_SHARED | MAP_POPULATE, fd, 0);
  const int err = errno;
  close(fd);
  if (address == MAP_FAILED)
    return remoteError("cannot map " + whose + kShareableName + " (" + std::to_string(range.blockBytes) +
                       " bytes): " + strerror(err));
  mapped_.push_back({range.blockId, range.fd, static_cast<const std::byte*>(address), range.blockBytes});
  *out = &mapped_.back();
  return Status::ok();
}

Status PeerBlocks::view(const BlockRange& range, size_t offset, size_t bytes, const std::byte** out) {
  if (offset > range.bytes || bytes > range.bytes - offset) {
    return internalError("rank " + std::to_string(peerRank_) + " named " + std::to_string(bytes) + " bytes at offset " +
                         std::to_string(offset) + " of a region of " + std::to_string(range.bytes));
  }
  const Mapped* m = nullptr;
  CHORUS_TRY(map(range, &m));
  *out = m->address + range.offset + offset;
  return Status::ok();
}

Status PeerBlocks::read(void* dst, const BlockRange& range, size_t offset, size_t bytes, Stores stores) {
  const std::byte* bytesThere = nullptr;
  CHORUS_TRY(view(range, offset, bytes, &bytesThere));
  copyWith(stores, dst, bytesThere, bytes);
  return Status::ok();
}

}  // namespace chorus::transport

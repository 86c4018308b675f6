#include "core/shareable_memory.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

namespace chorus {
namespace {

std::mutex gMutex;
std::map<uintptr_t, ShareableBlock>& blocks() {  // by base address, under gMutex
  static auto* all = new std::map<uintptr_t, ShareableBlock>();
  return *all;
}
std::atomic<uint64_t> gNextId{1};
std::atomic<size_t> gCount{0};  // blocks alive: lets findShareable skip the lock in programs that have none

}  // namespace

Status allocateShareable(size_t bytes, void** out) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t rounded = bytes == 0 ? page : (bytes + page - 1) / page * page;
  int fd = memfd_create(kShareableName, MFD_CLOEXEC);
  if (fd < 0) return systemError(std::string("memfd_create for shareable memory: ") + strerror(errno));
  const int err = posix_fallocate(fd, 0, static_cast<off_t>(rounded));
  void* address = err == 0 ? mmap(nullptr, rounded, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
  if (address == MAP_FAILED) {
    const std::string why = strerror(err != 0 ? err : errno);
    close(fd);
    return systemError("cannot allocate " + std::to_string(rounded) + " bytes of shareable memory: " + why);
  }
  ShareableBlock block{gNextId.fetch_add(1), fd, static_cast<const std::byte*>(address), rounded};
  std::lock_guard<std::mutex> lock(gMutex);
  blocks()[reinterpret_cast<uintptr_t>(address)] = block;
  gCount.fetch_add(1, std::memory_order_relaxed);
  *out = address;
  return Status::ok();
}

bool freeShareable(void* p) {
  ShareableBlock block;
  {
    std::lock_guard<std::mutex> lock(gMutex);
    auto it = blocks().find(reinterpret_cast<uintptr_t>(p));
    if (it == blocks().end()) return false;
    block = it->second;
    blocks().erase(it);
    gCount.fetch_sub(1, std::memory_order_relaxed);
  }
  munmap(const_cast<std::byte*>(block.base), block.bytes);
  close(block.fd);
  return true;
}

bool findShareable(const void* p, size_t bytes, ShareableBlock* out) {
  if (gCount.load(std::memory_order_relaxed) == 0) return false;
  const auto address = reinterpret_cast<uintptr_t>(p);
  std::lock_guard<std::mutex> lock(gMutex);
  auto& all = blocks();
  auto it = all.upper_bound(address);
  if (it == all.begin()) return false;
  const ShareableBlock& block = std::prev(it)->second;
  const auto base = reinterpret_cast<uintptr_t>(block.base);
  if (address - base > block.bytes || bytes > block.bytes - (address - base)) return false;
  *out = block;
  return true;
}

Status ShareableArea::reserve(size_t bytes, std::byte** out) {
  if (base_ == nullptr || bytes_ < bytes) {
    release();
    CHORUS_TRY(allocateShareable(bytes, &base_));
    bytes_ = bytes;
  }
  *out = static_cast<std::byte*>(base_);
  return Status::ok();
}

void ShareableArea::release() {
  if (base_) freeShareable(base_);
  base_ = nullptr;
  bytes_ = 0;
}

}  // namespace chorus

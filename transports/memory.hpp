// Registered memory: how a direct transfer names its bytes. The sender registers the buffer it sends from and the
// receiver gets the registration's peer bytes (a CMA address range, a verbs rkey, a UCX packed rkey, later a CUDA
// IPC handle); every transfer then names that region and an offset in it, never a raw pointer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "chorus/status.hpp"
#include "kernels/copy.hpp"

namespace chorus::transport {

/// How a receiver's copy treats the caches. A large step's bytes are not read again soon: streaming stores put them
/// in memory without first bringing each line into the cache, a third less memory traffic for a copy.
enum class Stores { kCached, kStreaming };

inline void copyWith(Stores stores, void* dst, const void* src, size_t bytes) {
  if (stores == Stores::kStreaming) {
    kernels::streamingCopy(dst, src, bytes);
  } else {
    kernels::copy(dst, src, bytes);
  }
}

/// Where an operation's buffers live. Only host memory exists today; device memory comes with GPU buffers.
enum class MemoryType : uint8_t { kHost = 0, kDevice = 1 };

inline const char* memoryTypeName(MemoryType type) { return type == MemoryType::kHost ? "host" : "device"; }

/// One registered region on the sending side. `state` holds what the transport made (a verbs memory region, a UCX
/// memory handle) and releases it when the last user lets go, so a region evicted from a cache while a transfer
/// still uses it stays registered until that transfer is done.
struct Registration {
  const std::byte* base = nullptr;
  size_t bytes = 0;
  MemoryType type = MemoryType::kHost;
  std::vector<std::byte> peerBytes;  // what the receiver needs to reach the region
  std::shared_ptr<void> state;
  // The peer cannot reach this memory (shm without cross-memory attach, a buffer that is not shareable): steps
  // from it send their bytes through the stream after all, and say so to the receiver first.
  bool viaStream = false;
};

/// A peer's region as the receiver knows it: its peer bytes, plus whatever the transport derived from them once
/// (an unpacked remote key), kept for the rest of the call.
struct RemoteRegion {
  std::vector<std::byte> peerBytes;
  std::shared_ptr<void> imported;
};

/// Peer bytes that are one struct of plain values, byte for byte.
template <typename T>
std::vector<std::byte> plainPeerBytes(const T& value) {
  std::vector<std::byte> out(sizeof(T));
  memcpy(out.data(), &value, sizeof(T));
  return out;
}
/// False when `peerBytes` cannot be a T (another size: the peer made another kind of region, or sent garbage).
template <typename T>
bool fromPlainPeerBytes(const std::vector<std::byte>& peerBytes, T* out) {
  if (peerBytes.size() != sizeof(T)) return false;
  memcpy(out, peerBytes.data(), sizeof(T));
  return true;
}

/// Peer bytes made of plain values, for transports whose regions are an address range (CMA, in-process).
struct AddressRange {
  uint64_t base = 0;
  uint64_t bytes = 0;

  std::vector<std::byte> encode() const { return plainPeerBytes(*this); }
  /// False when `peerBytes` is not an address range (the peer runs another transport or sent garbage).
  static bool decode(const std::vector<std::byte>& peerBytes, AddressRange* out) {
    return fromPlainPeerBytes(peerBytes, out);
  }
  /// True when [offset, offset + n) lies inside the range.
  bool holds(uint64_t offset, uint64_t n) const { return offset <= bytes && n <= bytes - offset; }
};

/// A registration that is only its address range (the transport reaches memory by address, or lets its library
/// register what it needs): host memory only.
inline Status addressRangeRegistration(const std::string& transport, const void* base, size_t bytes, MemoryType type,
                                       std::shared_ptr<const Registration>* out) {
  if (type != MemoryType::kHost)
    return invalidUsage(transport + " reaches host memory only, not " + memoryTypeName(type) + " memory");
  auto r = std::make_shared<Registration>();
  r->base = static_cast<const std::byte*>(base);
  r->bytes = bytes;
  r->type = type;
  r->peerBytes = AddressRange{reinterpret_cast<uint64_t>(base), bytes}.encode();
  *out = std::move(r);
  return Status::ok();
}

}  // namespace chorus::transport

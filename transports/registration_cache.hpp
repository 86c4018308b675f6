// Keeps memory registrations off the per-call path: a transport that pins or maps memory to send from it (verbs
// memory regions, UCX memory handles) asks this cache first. Entries are keyed by address range and memory type;
// a cached region that holds the asked range serves it. The least recently used entry goes when the cache is
// full; a transfer still holding it keeps it registered until that transfer lets go (Registration::state).
#pragma once

#include <cstddef>
#include <functional>
#include <list>
#include <memory>
#include <mutex>

#include "chorus/status.hpp"
#include "transports/memory.hpp"

namespace chorus::transport {

class RegistrationCache {
 public:
  /// Registers [base, base + bytes): fills `out` (peer bytes, and state whose release deregisters).
  using Register = std::function<Status(const void* base, size_t bytes, MemoryType type, Registration* out)>;

  RegistrationCache(size_t capacity, Register makeRegistration);

  /// A registration that holds [base, base + bytes) of `type`: a cached one, else a new one.
  Status find(const void* base, size_t bytes, MemoryType type, std::shared_ptr<const Registration>* out);
  /// Drops every entry that overlaps [base, base + bytes): the memory is about to be freed or reused.
  void forget(const void* base, size_t bytes);

  size_t size() const;
  uint64_t hits() const { return hits_; }
  uint64_t misses() const { return misses_; }

 private:
  mutable std::mutex mutex_;
  size_t capacity_;
  Register makeRegistration_;
  std::list<std::shared_ptr<const Registration>> entries_;  // most recently used first
  uint64_t hits_ = 0, misses_ = 0;
};

}  // namespace chorus::transport

/// @file store.hpp
/// Store: a key-value store the ranks of a communicator meet through, for frameworks that have one already
/// (PyTorch's c10d::Store, a job scheduler's). Communicator::create(store, ...) uses it instead of a UniqueId.
#pragma once

#include <cstdint>
#include <string>

#include "chorus/status.hpp"

namespace chorus {

/// What chorus needs of a store: every rank's calls see every other rank's keys. chorus waits for a key by asking
/// tryGet() again, with a growing pause up to a few milliseconds, until the communicator's timeout. Calls come from
/// the thread that creates the communicator and from the communicator's own threads, one at a time per
/// communicator; a store shared by several communicators must take calls from several threads at once.
class Store {
 public:
  virtual ~Store() = default;
  /// Sets `key` to `value`, visible to every rank's later tryGet().
  virtual Status set(const std::string& key, const std::string& value) = 0;
  /// The value of `key`, with *found = true, or *found = false at once when it is not set yet.
  virtual Status tryGet(const std::string& key, std::string* value, bool* found) = 0;
  /// Adds `delta` to the integer at `key` (0 when absent) and returns the new value, atomically across ranks.
  virtual Status add(const std::string& key, int64_t delta, int64_t* result) = 0;
  /// Optional: sets `key` to `value` unless it is set already, and returns in *stored the value it holds afterwards
  /// (the first writer's), atomically across ranks; c10d's compareSet with an empty expected value. Agreement
  /// (Communicator::agree) uses it so that the death of any rank during an agreement leaves the others one decision.
  /// A store without it (this default, kInvalidUsage) makes one rank decide alone: if that rank dies while
  /// deciding, the others wait until their timeout.
  virtual Status setIfAbsent(const std::string& key, const std::string& value, std::string* stored);
};

}  // namespace chorus

// Bootstrap: a rank's view of the rendezvous store, namespaced per communicator, with the two collective helpers
// that setup needs (allGather of small blobs and barrier). Only used at init, split and connection setup.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "bootstrap/store.hpp"
#include "chorus/store.hpp"
#include "chorus/unique_id.hpp"

namespace chorus::bootstrap {

class Bootstrap {
 public:
  /// Joins the rendezvous of `id` as `rank` of `nranks` (rank 0 starts the root for CHORUS_COMM_ID-style ids).
  static Status join(const UniqueId& id, int nranks, int rank, std::unique_ptr<Bootstrap>* out);
  /// Joins the rendezvous under `prefix` of a framework's store as `rank` of `nranks`.
  static Status join(std::shared_ptr<Store> store, const std::string& prefix, int nranks, int rank,
                     std::unique_ptr<Bootstrap>* out);

  /// A bootstrap for a sub-communicator: same store, its own key space.
  std::unique_ptr<Bootstrap> child(const std::string& name, int nranks, int rank) const;
  /// A bootstrap for a communicator that replaces this one (shrink, agreement after a failure): same store, a key
  /// space beside this one's rather than under it, so that this communicator's reported failure, which fails every
  /// key under its space, does not fail it.
  std::unique_ptr<Bootstrap> successor(const std::string& name, int nranks, int rank) const;

  Status allGather(const std::string& tag, const std::string& mine, std::vector<std::string>* all);
  Status barrier(const std::string& tag);
  Status set(const std::string& tag, const std::string& value);
  Status get(const std::string& tag, std::string* value);
  /// Adds `delta` to the integer under `tag` (0 when absent) and returns the new value, atomically across ranks;
  /// a delta of 0 reads it at once.
  Status add(const std::string& tag, int64_t delta, int64_t* result);
  /// Sets `tag` to `value` unless it is set; *stored is what it holds afterwards (the first writer's). kInvalidUsage
  /// where the store cannot (a framework's store without setIfAbsent).
  Status setIfAbsent(const std::string& tag, const std::string& value, std::string* stored);

  /// This rank starts setting up the communicator, finishes it, or gives up with `why`: while any rank is between
  /// begin and finish, its failure (or its process's end) fails every other rank's setup waits at once with that
  /// cause, instead of at CHORUS_TIMEOUT.
  Status beginSetup();
  Status finishSetup();
  void failSetup(const std::string& why);
  /// The first cause when some rank's setup of this communicator failed; ok otherwise. One round trip.
  Status setupStatus();
  /// After init: this rank's call failed with `why`. Kept by the store when it is the communicator's first failure;
  /// `*first` receives the first one (empty when the store cannot be reached within a second).
  void reportFailure(const std::string& why, std::string* first);

  int rank() const { return rank_; }
  int nranks() const { return nranks_; }
  /// A stable 64-bit name of this communicator, the same on every rank.
  uint64_t commHash() const;

 private:
  std::string key(const std::string& tag) const { return namespace_ + "/" + tag; }

  std::shared_ptr<KeyValueStore> store_;
  std::string namespace_;
  int rank_ = 0;
  int nranks_ = 0;
};

}  // namespace chorus::bootstrap

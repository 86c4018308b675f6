// A framework's key-value store (chorus::Store) as the bootstrap's rendezvous store. Such a store only sets, reads
// and adds, so waits poll, and a failed setup is a key of its own ("<space>/#cause") that every wait under the
// space looks at: a rank whose setup fails ends the others' waits with its cause, as with chorus's own server. What
// it cannot tell is a rank that died without a word: the others then wait until their timeout.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "bootstrap/store.hpp"
#include "chorus/store.hpp"

namespace chorus::bootstrap {

class UserStore : public KeyValueStore {
 public:
  explicit UserStore(std::shared_ptr<Store> store) : store_(std::move(store)) {}

  Status set(const std::string& key, const std::string& value) override;
  Status get(const std::string& key, std::string* value, const Deadline& deadline) override;
  Status add(const std::string& key, int64_t delta, int64_t* result) override;
  Status setIfAbsent(const std::string& key, const std::string& value, std::string* stored) override;
  Status join(const std::string& space, int rank, int nranks) override;
  Status ready(const std::string& space) override;
  Status fail(const std::string& space, const std::string& why, std::string* firstCause) override;

 private:
  /// The first failure of a space that `key` lies under, as a kRemoteError; ok when none failed.
  Status failureOver(const std::string& key);
  /// The user store's error, with what chorus asked of it.
  static Status storeError(const Status& st, const char* what, const std::string& key);

  std::shared_ptr<Store> store_;
  std::mutex mutex_;
  std::vector<std::string> spaces_;  // every space joined through this object, under mutex_
};

}  // namespace chorus::bootstrap

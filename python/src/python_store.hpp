// A Python object as chorus's rendezvous Store: any object with set/get/add (and compare_set, optional), as
// torch.distributed's stores have.
#pragma once

#include <nanobind/nanobind.h>

#include "chorus/store.hpp"

namespace chorus::python {

/// Calls come from chorus's threads, so each one takes the GIL. A Python exception becomes a remote error naming
/// the store and the exception's text.
class PythonStore : public Store {
 public:
  explicit PythonStore(nanobind::object store) : store_(std::move(store)) {}
  ~PythonStore() override;
  Status set(const std::string& key, const std::string& value) override;
  Status tryGet(const std::string& key, std::string* value, bool* found) override;
  Status add(const std::string& key, int64_t delta, int64_t* result) override;
  /// Through the object's compare_set(key, b"", value) where it has one (torch's stores do).
  Status setIfAbsent(const std::string& key, const std::string& value, std::string* stored) override;

 private:
  nanobind::object store_;
};

}  // namespace chorus::python

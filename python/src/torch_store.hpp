// torch.distributed's Store (the TCPStore or FileStore init_process_group made, already prefixed per group) as
// chorus's rendezvous Store.
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>

#include "chorus/store.hpp"

namespace chorus::torch_backend {

class TorchStore : public Store {
 public:
  explicit TorchStore(c10::intrusive_ptr<c10d::Store> store) : store_(std::move(store)) {}
  Status set(const std::string& key, const std::string& value) override;
  Status tryGet(const std::string& key, std::string* value, bool* found) override;
  Status add(const std::string& key, int64_t delta, int64_t* result) override;
  Status setIfAbsent(const std::string& key, const std::string& value, std::string* stored) override;

 private:
  c10::intrusive_ptr<c10d::Store> store_;
};

}  // namespace chorus::torch_backend

#include "torch_store.hpp"

namespace chorus::torch_backend {
namespace {

Status failure(const char* what, const std::string& key, const std::exception& e) {
  return remoteError(std::string("torch.distributed's store: ") + what + "('" + key + "'): " + e.what());
}

}  // namespace

Status TorchStore::set(const std::string& key, const std::string& value) {
  try {
    store_->set(key, std::vector<uint8_t>(value.begin(), value.end()));
    return Status::ok();
  } catch (const std::exception& e) {
    return failure("set", key, e);
  }
}

Status TorchStore::tryGet(const std::string& key, std::string* value, bool* found) {
  try {
    // get() blocks until the key exists; check() answers at once.
    *found = store_->check({key});
    if (*found) {
      std::vector<uint8_t> bytes = store_->get(key);
      value->assign(bytes.begin(), bytes.end());
    }
    return Status::ok();
  } catch (const std::exception& e) {
    return failure("get", key, e);
  }
}

Status TorchStore::add(const std::string& key, int64_t delta, int64_t* result) {
  try {
    *result = store_->add(key, delta);
    return Status::ok();
  } catch (const std::exception& e) {
    return failure("add", key, e);
  }
}

Status TorchStore::setIfAbsent(const std::string& key, const std::string& value, std::string* stored) {
  try {
    // An absent key and an empty expected value: c10d sets it and returns the new value; a set key: its value.
    std::vector<uint8_t> now = store_->compareSet(key, {}, std::vector<uint8_t>(value.begin(), value.end()));
    stored->assign(now.begin(), now.end());
    return Status::ok();
  } catch (const std::exception& e) {
    return failure("compareSet", key, e);
  }
}

}  // namespace chorus::torch_backend

#include "transports/registration_cache.hpp"

namespace chorus::transport {

RegistrationCache::RegistrationCache(size_t capacity, Register makeRegistration)
    : capacity_(capacity > 0 ? capacity : 1), makeRegistration_(std::move(makeRegistration)) {}

Status RegistrationCache::find(const void* base, size_t bytes, MemoryType type,
                               std::shared_ptr<const Registration>* out) {
  const auto* begin = static_cast<const std::byte*>(base);
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    const Registration& r = **it;
    if (r.type == type && r.base <= begin && begin + bytes <= r.base + r.bytes) {
      entries_.splice(entries_.begin(), entries_, it);
      ++hits_;
      *out = entries_.front();
      return Status::ok();
    }
  }
  auto made = std::make_shared<Registration>();
  made->base = begin;
  made->bytes = bytes;
  made->type = type;
  CHORUS_TRY(makeRegistration_(base, bytes, type, made.get()));
  ++misses_;
  entries_.push_front(made);
  if (entries_.size() > capacity_) entries_.pop_back();
  *out = std::move(made);
  return Status::ok();
}

void RegistrationCache::forget(const void* base, size_t bytes) {
  const auto* begin = static_cast<const std::byte*>(base);
  std::lock_guard<std::mutex> lock(mutex_);
  entries_.remove_if([&](const std::shared_ptr<const Registration>& r) {
    return r->base < begin + bytes && begin < r->base + r->bytes;
  });
}

size_t RegistrationCache::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return entries_.size();
}

}  // namespace chorus::transport

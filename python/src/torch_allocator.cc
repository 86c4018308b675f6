#include "torch_allocator.hpp"

#include <c10/core/CPUAllocator.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <vector>

#include "chorus/shareable_memory.hpp"

namespace chorus::torch_backend {
namespace {

class ShareableCpuAllocator final : public c10::Allocator {
 public:
  void install(size_t minBytes, size_t cacheBytes) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!installed_) previous_.store(c10::GetCPUAllocator());
      minBytes_ = minBytes;
      cacheBytes_ = cacheBytes;
      installed_ = true;
    }
    trimCache(cacheBytes);
    c10::SetCPUAllocator(this, /*priority=*/0);
    TORCH_CHECK(c10::GetCPUAllocator() == this,
                "chorus: torch kept its CPU allocator (another one was installed with a higher priority)");
  }

  void uninstall() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!installed_) return;
      installed_ = false;
      minBytes_ = SIZE_MAX;  // whoever kept a pointer to this allocator gets the previous one's memory
      c10::SetCPUAllocator(previous_.load(), /*priority=*/0);
    }
    trimCache(0);
  }

  c10::DataPtr allocate(size_t n) override {
    c10::Allocator* fallback = previous_.load(std::memory_order_acquire);
    // Small tensors, torch's most frequent ones, pass on without taking the lock.
    if (n == 0 || n < minBytes_.load(std::memory_order_relaxed)) return fallback->allocate(n);
    return allocateShareableData(n, fallback);
  }

  // `n` bytes of shareable memory: a cached block at most a quarter larger (a loop's tensors come back at the sizes
  // they left with), else a new one; where the system refuses shareable memory, `fallback`'s plain memory (collectives
  // copy it, nothing fails).
  c10::DataPtr allocateShareableData(size_t n, c10::Allocator* fallback) {
    const size_t rounded = (std::max<size_t>(n, 1) + kPage - 1) / kPage * kPage;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = cached_.lower_bound(rounded);
      if (it != cached_.end() && it->first <= rounded + rounded / 4) {
        void* p = it->second.p;
        cachedBytes_ -= it->first;
        live_[reinterpret_cast<uintptr_t>(p)] = it->first;
        cached_.erase(it);
        ++allocations_;
        return {p, p, &release, c10::Device(c10::DeviceType::CPU)};
      }
    }
    void* p = nullptr;
    if (!allocateShareable(rounded, &p).isOk()) return fallback->allocate(n);
    std::lock_guard<std::mutex> lock(mutex_);
    live_[reinterpret_cast<uintptr_t>(p)] = rounded;
    ++allocations_;
    ++created_;
    return {p, p, &release, c10::Device(c10::DeviceType::CPU)};
  }

  c10::DeleterFnPtr raw_deleter() const override {
    c10::Allocator* previous = previous_.load();
    return previous && previous->raw_deleter() ? &rawDelete : nullptr;
  }

  void copy_data(void* dest, const void* src, std::size_t count) const override { default_copy_data(dest, src, count); }

  ShareableMemoryStats stats() {
    std::lock_guard<std::mutex> lock(mutex_);
    ShareableMemoryStats s;
    for (const auto& [p, bytes] : live_) s.liveBytes += bytes;
    s.cachedBytes = cachedBytes_;
    s.allocations = allocations_;
    s.created = created_;
    return s;
  }

  bool holds(const void* p) {
    const auto address = reinterpret_cast<uintptr_t>(p);
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = live_.upper_bound(address);
    if (it == live_.begin()) return false;
    --it;
    return address - it->first < it->second;
  }

  static ShareableCpuAllocator& instance() {
    // Never destroyed: tensors may be freed during the process's exit, after static destructors ran.
    static auto* allocator = new ShareableCpuAllocator();
    return *allocator;
  }

 private:
  static void release(void* p) { instance().free(p); }

  static void rawDelete(void* p) {
    ShareableCpuAllocator& self = instance();
    if (!self.free(p)) self.previous_.load()->raw_deleter()(p);
  }

  // Keeps a freed block for reuse, releasing the blocks freed longest ago when the cache overflows (the block just
  // freed is the likeliest to serve the next tensor: a loop frees and allocates the same sizes); false when `p` is
  // not ours.
  bool free(void* p) {
    size_t keep;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = live_.find(reinterpret_cast<uintptr_t>(p));
      if (it == live_.end()) return false;
      const size_t bytes = it->second;
      live_.erase(it);
      keep = cacheBytes_;
      if (bytes <= keep) {
        cached_.emplace(bytes, Cached{p, ++freedCount_});
        cachedBytes_ += bytes;
        p = nullptr;
      }
    }
    if (p) freeShareable(p);
    trimCache(keep);
    return true;
  }

  // Releases the blocks freed longest ago until the cache holds at most `keep` bytes.
  void trimCache(size_t keep) {
    std::vector<void*> released;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      while (cachedBytes_ > keep) {
        auto oldest = std::min_element(cached_.begin(), cached_.end(),
                                       [](const auto& a, const auto& b) { return a.second.freed < b.second.freed; });
        cachedBytes_ -= oldest->first;
        released.push_back(oldest->second.p);
        cached_.erase(oldest);
      }
    }
    for (void* p : released) freeShareable(p);
  }

  inline static const size_t kPage = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  std::mutex mutex_;
  std::atomic<c10::Allocator*> previous_{nullptr};  // what allocates what this one does not (raw_deleter reads it)
  bool installed_ = false;
  std::atomic<size_t> minBytes_{SIZE_MAX};
  size_t cacheBytes_ = kDefaultCacheBytes;  // read under mutex_
  std::map<uintptr_t, size_t> live_;        // blocks held by tensors: base -> bytes
  struct Cached {
    void* p;
    uint64_t freed;  // order of freeing: the oldest go first
  };
  std::multimap<size_t, Cached> cached_;  // freed blocks kept for reuse, by bytes (at most cacheBytes / minBytes)
  uint64_t freedCount_ = 0;
  size_t cachedBytes_ = 0;
  size_t allocations_ = 0;
  size_t created_ = 0;
};

}  // namespace

c10::DataPtr allocateShareableData(size_t bytes) {
  return ShareableCpuAllocator::instance().allocateShareableData(bytes, c10::GetDefaultCPUAllocator());
}

void useShareableMemory(size_t minBytes, size_t cacheBytes) {
  ShareableCpuAllocator::instance().install(minBytes, cacheBytes);
}

void useDefaultMemory() { ShareableCpuAllocator::instance().uninstall(); }

ShareableMemoryStats shareableMemoryStats() { return ShareableCpuAllocator::instance().stats(); }

bool isShareable(const void* p) { return ShareableCpuAllocator::instance().holds(p); }

}  // namespace chorus::torch_backend

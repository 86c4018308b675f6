// The registration cache: hits for ranges a cached region holds, one registration per miss, least recently used
// eviction, a region in use outliving its eviction, forget() for memory about to be freed, failures passed on.
#include "transports/registration_cache.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace chorus::transport {
namespace {

// Counts registrations made and released, as a transport's pin/unpin would.
struct Counter {
  int made = 0, released = 0;
  RegistrationCache::Register maker() {
    return [this](const void* base, size_t bytes, MemoryType, Registration* out) {
      ++made;
      out->peerBytes = AddressRange{reinterpret_cast<uint64_t>(base), bytes}.encode();
      out->state = std::shared_ptr<void>(nullptr, [this](void*) { ++released; });
      return Status::ok();
    };
  }
};

TEST(RegistrationCache, AGivenRangeIsRegisteredOnce) {
  Counter counter;
  RegistrationCache cache(4, counter.maker());
  std::vector<std::byte> buffer(1 << 20);
  std::shared_ptr<const Registration> first, again, inside;
  ASSERT_TRUE(cache.find(buffer.data(), buffer.size(), MemoryType::kHost, &first).isOk());
  ASSERT_TRUE(cache.find(buffer.data(), buffer.size(), MemoryType::kHost, &again).isOk());
  ASSERT_TRUE(cache.find(buffer.data() + 4096, 8192, MemoryType::kHost, &inside).isOk());
  EXPECT_EQ(counter.made, 1);
  EXPECT_EQ(first, again);
  EXPECT_EQ(first, inside);  // the cached region holds the smaller range
  EXPECT_EQ(cache.hits(), 2u);
  EXPECT_EQ(cache.misses(), 1u);
  AddressRange range;
  ASSERT_TRUE(AddressRange::decode(first->peerBytes, &range));
  EXPECT_EQ(range.base, reinterpret_cast<uint64_t>(buffer.data()));
  EXPECT_EQ(range.bytes, buffer.size());
}

TEST(RegistrationCache, ARangeReachingPastARegionOrOfAnotherTypeIsANewRegistration) {
  Counter counter;
  RegistrationCache cache(4, counter.maker());
  std::vector<std::byte> buffer(8192);
  std::shared_ptr<const Registration> a, longer, device;
  ASSERT_TRUE(cache.find(buffer.data(), 4096, MemoryType::kHost, &a).isOk());
  ASSERT_TRUE(cache.find(buffer.data(), 4097, MemoryType::kHost, &longer).isOk());
  ASSERT_TRUE(cache.find(buffer.data(), 4096, MemoryType::kDevice, &device).isOk());
  EXPECT_EQ(counter.made, 3);
  EXPECT_NE(a, longer);
  EXPECT_EQ(device->type, MemoryType::kDevice);
}

TEST(RegistrationCache, TheLeastRecentlyUsedGoesFirstAndIsReleasedWhenNothingHoldsIt) {
  Counter counter;
  RegistrationCache cache(2, counter.maker());
  std::vector<std::byte> buffer(3 * 4096);
  std::shared_ptr<const Registration> r;
  ASSERT_TRUE(cache.find(buffer.data(), 4096, MemoryType::kHost, &r).isOk());         // A
  ASSERT_TRUE(cache.find(buffer.data() + 4096, 4096, MemoryType::kHost, &r).isOk());  // B
  ASSERT_TRUE(cache.find(buffer.data(), 4096, MemoryType::kHost, &r).isOk());         // A again: B is oldest
  std::shared_ptr<const Registration> held;
  ASSERT_TRUE(cache.find(buffer.data() + 8192, 4096, MemoryType::kHost, &held).isOk());  // C evicts B
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(counter.released, 1);
  ASSERT_TRUE(cache.find(buffer.data(), 4096, MemoryType::kHost, &r).isOk());  // A is still there
  EXPECT_EQ(counter.made, 3);
  ASSERT_TRUE(cache.find(buffer.data() + 4096, 4096, MemoryType::kHost, &r).isOk());  // B again evicts C
  EXPECT_EQ(counter.made, 4);
  EXPECT_EQ(counter.released, 1) << "C is still held by a transfer";
  held.reset();
  EXPECT_EQ(counter.released, 2);
}

TEST(RegistrationCache, ForgetDropsEveryOverlappingRegion) {
  Counter counter;
  RegistrationCache cache(8, counter.maker());
  std::vector<std::byte> buffer(4 * 4096);
  std::shared_ptr<const Registration> r;
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(cache.find(buffer.data() + i * 4096, 4096, MemoryType::kHost, &r).isOk());
  r.reset();
  cache.forget(buffer.data() + 4095, 4098);  // touches the first three
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_EQ(counter.released, 3);
}

TEST(RegistrationCache, AFailedRegistrationIsReportedAndNotCached) {
  int calls = 0;
  RegistrationCache cache(4, [&](const void*, size_t, MemoryType, Registration*) {
    ++calls;
    return remoteError("ibv_reg_mr: Cannot allocate memory");
  });
  std::vector<std::byte> buffer(64);
  std::shared_ptr<const Registration> r;
  Status st = cache.find(buffer.data(), buffer.size(), MemoryType::kHost, &r);
  EXPECT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("ibv_reg_mr"), std::string::npos);
  EXPECT_FALSE(cache.find(buffer.data(), buffer.size(), MemoryType::kHost, &r).isOk());
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(cache.size(), 0u);
}

}  // namespace
}  // namespace chorus::transport

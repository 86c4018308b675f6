// Which receive buffers the communicator takes as still cached (plain stores) and which as cold (streaming stores
// for mid-size steps): the same buffer again, two buffers in turn and a pool within the budget are cached; a buffer
// not seen before, or one whose reuse is further back than the budget, is cold.
#include "engine/cache_residency.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace chorus::testing {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

TEST(CacheResidency, ABufferSeenForTheFirstTimeIsCold) {
  engine::CacheResidency r(16 * kMiB);
  std::vector<char> a(16), b(16);
  EXPECT_FALSE(r.touch(a.data(), 2 * kMiB));
  EXPECT_FALSE(r.touch(b.data(), 2 * kMiB));
}

TEST(CacheResidency, TheSameBufferAgainAndTwoInTurnAreCached) {
  engine::CacheResidency r(16 * kMiB);
  std::vector<char> a(16), b(16);
  r.touch(a.data(), 4 * kMiB);
  EXPECT_TRUE(r.touch(a.data(), 4 * kMiB));
  r.touch(b.data(), 4 * kMiB);
  for (int i = 0; i < 10; ++i) {
    EXPECT_TRUE(r.touch(a.data(), 4 * kMiB)) << i;
    EXPECT_TRUE(r.touch(b.data(), 4 * kMiB)) << i;
  }
}

TEST(CacheResidency, ACallLargerThanTheBudgetIsColdEvenOnTheSameBuffer) {
  engine::CacheResidency r(16 * kMiB);
  std::vector<char> a(16);
  r.touch(a.data(), 32 * kMiB);
  EXPECT_FALSE(r.touch(a.data(), 32 * kMiB));
}

// A loop of many calls on one buffer evicts no other: the perf tools' hot sweeps alternate such loops on two
// buffers (out of place, then in place), each of hundreds of calls.
TEST(CacheResidency, RepeatedCallsOnOneBufferDoNotAgeTheOthers) {
  engine::CacheResidency r(16 * kMiB);
  std::vector<char> a(16), b(16);
  r.touch(a.data(), 2 * kMiB);
  for (int i = 0; i < 100; ++i) r.touch(b.data(), 2 * kMiB);
  EXPECT_TRUE(r.touch(a.data(), 2 * kMiB));
}

TEST(CacheResidency, APoolWithinTheBudgetIsCachedOneBeyondItIsCold) {
  std::vector<char> pool(64);
  const auto cycle = [&](engine::CacheResidency& r, int buffers, size_t bytes) {
    int cached = 0;
    for (int round = 0; round < 3; ++round) {
      for (int i = 0; i < buffers; ++i) cached += r.touch(&pool[static_cast<size_t>(i)], bytes) ? 1 : 0;
    }
    return cached;
  };
  engine::CacheResidency within(16 * kMiB);
  EXPECT_EQ(cycle(within, 8, 2 * kMiB), 16);  // 16 MiB in all: every buffer after the first round
  engine::CacheResidency beyond(16 * kMiB);
  EXPECT_EQ(cycle(beyond, 9, 2 * kMiB), 0);  // 18 MiB: each is evicted before its turn comes again
}

TEST(CacheResidency, OnlyTheLastBuffersAreRemembered) {
  engine::CacheResidency r(size_t{1} << 40);  // a budget nothing exceeds: only forgetting makes a buffer cold
  std::vector<char> pool(engine::CacheResidency::kRemembered + 1);
  for (char& c : pool) r.touch(&c, 1);
  EXPECT_FALSE(r.touch(&pool[0], 1));  // pushed out by the last one
  EXPECT_TRUE(r.touch(&pool.back(), 1));
  EXPECT_TRUE(r.touch(&pool[2], 1));
}

TEST(CacheResidency, TheShareDividesTheCacheAmongItsRanks) {
  const size_t one = engine::lastLevelCacheShare(1);
  EXPECT_GT(one, 0u);
  EXPECT_EQ(engine::lastLevelCacheShare(4), one / 4);
  EXPECT_EQ(engine::lastLevelCacheShare(0), one);
}

}  // namespace
}  // namespace chorus::testing

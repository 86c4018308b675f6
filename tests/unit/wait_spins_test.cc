// The polls a waiting rank makes before it yields: CHORUS_SPIN when set, long with a core for every rank, and with
// more ranks than cores one for a small call and 16 for a larger one.
#include "engine/wait_spins.hpp"

#include <gtest/gtest.h>

namespace chorus::testing {
namespace {

TEST(WaitSpins, ACoreForEveryRankSpinsLongWhateverTheSize) {
  const engine::WaitSpins spins{0, false};
  EXPECT_EQ(spins.forCall(8), 20000);
  EXPECT_EQ(spins.forCall(64 << 20), 20000);
}

TEST(WaitSpins, MoreRanksThanCoresYieldAfterOnePollOnSmallCalls) {
  const engine::WaitSpins spins{0, true};
  EXPECT_EQ(spins.forCall(0), 1);
  EXPECT_EQ(spins.forCall(engine::kSmallCallBytes - 1), 1);
  EXPECT_EQ(spins.forCall(engine::kSmallCallBytes), 16);
  EXPECT_EQ(spins.forCall(64 << 20), 16);
}

TEST(WaitSpins, TheSettingWinsEverywhere) {
  for (bool oversubscribed : {false, true}) {
    const engine::WaitSpins spins{300, oversubscribed};
    EXPECT_EQ(spins.forCall(8), 300);
    EXPECT_EQ(spins.forCall(64 << 20), 300);
  }
}

}  // namespace
}  // namespace chorus::testing

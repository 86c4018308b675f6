// The ring of owed call headers (engine/header_ring.hpp): oldest first through wraps and growth, as a Broadcast
// root's loop uses it (one added per call, confirmations taking several at once).
#include "engine/header_ring.hpp"

#include <gtest/gtest.h>

#include <cstdint>

namespace chorus::engine {
namespace {

TEST(HeaderRing, KeepsOrderThroughWrapsAndGrowth) {
  HeaderRing ring;
  EXPECT_TRUE(ring.empty());
  uint32_t added = 0, taken = 0;
  auto add = [&](int n) {
    for (int i = 0; i < n; ++i) {
      CallHeader h;
      h.streamCall = 1000;  // changed in place, as armHeaders does
      ring.push(h).streamCall = ++added;
    }
  };
  auto take = [&](size_t n) {
    for (size_t i = 0; i < n; ++i) {
      ASSERT_FALSE(ring.empty());
      EXPECT_EQ(ring.front().streamCall, ++taken);
      ring.pop();
    }
  };
  add(10);
  take(7);
  add(12);  // wraps the first 16 slots
  EXPECT_EQ(ring.size(), 15u);
  add(60);  // grows twice while wrapped
  EXPECT_EQ(ring.size(), 75u);
  take(5);
  ring.pop(30);  // a confirmation of several calls at once
  taken += 30;
  take(40);
  EXPECT_TRUE(ring.empty());
  add(3);
  take(3);
  EXPECT_EQ(added, taken);
}

}  // namespace
}  // namespace chorus::engine

// The ib transport's protocol without a device: the ring writes and credits carry any stream in order without
// overrunning the receiver's ring, RDMA READ windows hand out chunks in order, immediates round-trip, and
// NCCL_IB_HCA filters and port rates read as NCCL documents them.
#include <gtest/gtest.h>

#include <deque>
#include <random>
#include <vector>

#include "transports/ib/device_selection.hpp"
#include "transports/ib/stream_protocol.hpp"

namespace chorus::transport::ib {
namespace {

TEST(IbImmediate, KindAndBytesRoundTrip) {
  for (auto kind : {ImmediateKind::kData, ImmediateKind::kCredit, ImmediateKind::kDirectAck, ImmediateKind::kClose}) {
    for (uint32_t bytes : {0u, 1u, 65536u, static_cast<uint32_t>(kMaxRingBytes)}) {
      const uint32_t imm = immediate(kind, bytes);
      EXPECT_EQ(immediateKind(imm), kind);
      EXPECT_EQ(immediateBytes(imm), bytes);
    }
  }
}

// A sender and a receiver over a simulated ring: the engine commits random amounts into staging while there is
// room, writes land in order (RC), the receiver consumes random amounts and credits come back. Every byte arrives
// in order and the ring never holds more than its capacity.
TEST(IbStream, RandomTrafficArrivesInOrderWithinTheRing) {
  for (uint64_t capacity : {uint64_t{4096}, uint64_t{65536}}) {
    std::mt19937_64 random(capacity);
    RingWriter writer(capacity, 1024, 4);
    RingReader reader(capacity);
    std::vector<uint8_t> staging(capacity), ring(capacity);
    uint64_t committed = 0, credited = 0, consumed = 0, produced = 0, checked = 0;
    std::deque<std::pair<RingWriter::Write, std::vector<uint8_t>>> inFlight;  // writes the fabric still carries
    const uint64_t total = 50 * capacity;
    while (checked < total) {
      // Engine: stage bytes while staging has room (committed - credited <= capacity).
      uint64_t room = capacity - (committed - credited);
      uint64_t n = std::min<uint64_t>(random() % 3000, std::min(room, total - committed));
      for (uint64_t i = 0; i < n; ++i) staging[(committed + i) % capacity] = static_cast<uint8_t>((committed + i) * 7);
      committed += n;
      // Transport: post writes.
      for (auto w = writer.next(committed); w.bytes > 0; w = writer.next(committed)) {
        ASSERT_LE(w.offset + w.bytes, capacity) << "a write crosses the ring's end";
        inFlight.push_back({w, std::vector<uint8_t>(staging.begin() + w.offset, staging.begin() + w.offset + w.bytes)});
        writer.posted(w);
      }
      // Fabric: deliver some writes, in order.
      while (!inFlight.empty() && random() % 2) {
        auto& [w, bytes] = inFlight.front();
        std::copy(bytes.begin(), bytes.end(), ring.begin() + w.offset);
        reader.arrived(static_cast<uint32_t>(w.bytes));
        writer.completed();
        inFlight.pop_front();
      }
      ASSERT_LE(reader.arrivedTotal() - consumed, capacity);
      // Engine on the receiver: consume some, checking each byte.
      uint64_t take = std::min<uint64_t>(random() % 4000, reader.arrivedTotal() - consumed);
      for (uint64_t i = 0; i < take; ++i, ++consumed)
        ASSERT_EQ(ring[consumed % capacity], static_cast<uint8_t>(consumed * 7)) << "byte " << consumed;
      checked = consumed;
      if (uint64_t due = reader.creditDue(consumed); due > 0) {
        reader.credited(due);
        credited += due;  // the credit immediate arrives (delay does not matter: it only frees less, later)
      }
      produced = committed;
    }
    EXPECT_EQ(produced, total);
  }
}

TEST(IbStream, NoWriteWhileTooManyAreOutstanding) {
  RingWriter writer(1 << 20, 4096, 2);
  writer.posted(writer.next(1 << 20));
  writer.posted(writer.next(1 << 20));
  EXPECT_EQ(writer.next(1 << 20).bytes, 0u);
  writer.completed();
  EXPECT_EQ(writer.next(1 << 20).offset, 8192u);
}

TEST(IbReadWindow, ChunksComeOutInOrderThroughTheSlots) {
  ReadWindow window(1000, 3);
  window.want(500, 4500);  // chunks at 500, 1500, 2500, 3500, 4500 (500 bytes)
  std::vector<ReadWindow::Read> posted;
  for (auto r = window.next(); r.bytes > 0; r = window.next()) {
    posted.push_back(r);
    window.posted(r);
  }
  ASSERT_EQ(posted.size(), 3u);  // three slots
  EXPECT_EQ(posted[2].offset, 2500u);
  EXPECT_EQ(window.ready().bytes, 0u);
  window.completed();
  auto first = window.ready();
  EXPECT_EQ(first.offset, 500u);
  EXPECT_EQ(first.slot, posted[0].slot);
  window.taken();
  window.want(1500, 3500);  // the engine asks for the rest: the same transfer goes on
  auto r = window.next();
  EXPECT_EQ(r.offset, 3500u);
  EXPECT_EQ(r.slot, posted[0].slot) << "the freed slot is used again";
  window.posted(r);
  window.completed();
  window.completed();
  window.completed();
  uint64_t expect = 1500;
  while (window.ready().bytes > 0) {
    EXPECT_EQ(window.ready().offset, expect);
    expect += window.ready().bytes;
    window.taken();
    if (auto more = window.next(); more.bytes > 0) {
      window.posted(more);
      window.completed();
    }
  }
  EXPECT_EQ(expect, 5000u);
  EXPECT_TRUE(window.idle());
}

TEST(IbHcaFilter, FollowsNcclsSyntax) {
  HcaFilter f;
  ASSERT_TRUE(parseHcaFilter("", &f).isOk());
  EXPECT_TRUE(f.accepts("mlx5_0", 1));
  ASSERT_TRUE(parseHcaFilter("mlx5_0:1,mlx5_1", &f).isOk());
  EXPECT_TRUE(f.accepts("mlx5_0", 1));
  EXPECT_FALSE(f.accepts("mlx5_0", 2));
  EXPECT_TRUE(f.accepts("mlx5_1", 2));
  EXPECT_TRUE(f.accepts("mlx5_10", 1)) << "names match as prefixes";
  EXPECT_FALSE(f.accepts("mlx4_0", 1));
  ASSERT_TRUE(parseHcaFilter("=mlx5_1", &f).isOk());
  EXPECT_FALSE(f.accepts("mlx5_10", 1));
  EXPECT_TRUE(f.accepts("mlx5_1", 1));
  ASSERT_TRUE(parseHcaFilter("^mlx5_0", &f).isOk());
  EXPECT_FALSE(f.accepts("mlx5_0", 1));
  EXPECT_TRUE(f.accepts("mlx5_2", 1));
  ASSERT_TRUE(parseHcaFilter("^=mlx5_1:1", &f).isOk());
  EXPECT_TRUE(f.accepts("mlx5_10", 1));
  EXPECT_FALSE(f.accepts("mlx5_1", 1));
  EXPECT_TRUE(f.accepts("mlx5_1", 2));
  for (const char* bad : {"mlx5_0:x", "mlx5_0:", ":1", "mlx5_0:0"}) {
    Status st = parseHcaFilter(bad, &f);
    EXPECT_FALSE(st.isOk()) << bad;
    EXPECT_NE(st.message().find("NCCL_IB_HCA"), std::string::npos) << st.message();
  }
}

TEST(IbPortRate, WidthTimesLaneSpeed) {
  EXPECT_DOUBLE_EQ(portGbps(2, 32), 100.0);   // 4x EDR
  EXPECT_DOUBLE_EQ(portGbps(2, 64), 200.0);   // 4x HDR
  EXPECT_DOUBLE_EQ(portGbps(2, 128), 400.0);  // 4x NDR
  EXPECT_DOUBLE_EQ(portGbps(1, 1), 2.5);      // 1x SDR
  EXPECT_DOUBLE_EQ(portGbps(3, 32), 0.0);     // unknown width
}

}  // namespace
}  // namespace chorus::transport::ib

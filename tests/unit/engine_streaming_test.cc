// Each plan of a call carries its own streaming threshold (Binding::streamingFrom): a group's operations write into
// buffers the communicator judged one by one, so one operation's steps may stream while another's keep plain stores,
// and the results are exact either way. A sender whose plain pieces into a peer's FIFO crawl (the cores far apart)
// writes the next ones with streaming stores (FarReaderStores).
#include <gtest/gtest.h>
#include <poll.h>

#include <chrono>
#include <numeric>
#include <thread>
#include <vector>

#include "algorithms/plan.hpp"
#include "engine/execution.hpp"
#include "tests/support/fifo_pair.hpp"

namespace chorus::engine {
namespace {

using algo::BufferKind;
using algo::Plan;
using algo::StepKind;
using transport::Stores;

constexpr size_t kBytes = 256 << 10;  // above the 64 KiB cold threshold, below kStreamingThreshold

Plan sendAll(size_t bytes) {
  Plan p;
  p.add({StepKind::kSend, 1, {BufferKind::kSend, 0}, {}, bytes});
  return p;
}

Plan receiveAll(size_t bytes) {
  Plan p;
  p.add({StepKind::kRecv, 0, {}, {BufferKind::kRecv, 0}, bytes});
  return p;
}

void runToEnd(Execution& a, Execution& b) {
  for (int round = 0; round < 1000000 && !(a.done() && b.done()); ++round) {
    bool moved = false;
    ASSERT_TRUE(a.advance(&moved).isOk());
    ASSERT_TRUE(b.advance(&moved).isOk());
  }
  ASSERT_TRUE(a.done() && b.done());
}

Binding into(void* recv, size_t streamingFrom) {
  Binding b{nullptr, recv, nullptr, nullptr, 1};
  b.streamingFrom = streamingFrom;
  return b;
}

Binding from(const void* send) { return {send, nullptr, nullptr, nullptr, 1}; }

// Two receives in one call (a group of two Recvs): the first into a buffer judged cold, the second into one judged
// cached.
TEST(EngineStreaming, EachPlanOfACallKeepsItsOwnThreshold) {
  testing::FifoPair pair(transport::FifoConnection::Direct::kNone);
  auto sender = pair.execution(0), receiver = pair.execution(1);
  std::vector<int32_t> first(kBytes / 4), second(kBytes / 4), out1(kBytes / 4, -1), out2(kBytes / 4, -1);
  std::iota(first.begin(), first.end(), 1);
  std::iota(second.begin(), second.end(), 1000000);
  const Plan send = sendAll(kBytes), receive = receiveAll(kBytes);
  const BoundPlan sends[] = {{&send, from(first.data())}, {&send, from(second.data())}};
  const BoundPlan receives[] = {{&receive, into(out1.data(), 64 << 10)},
                                {&receive, into(out2.data(), kStreamingThreshold)}};
  sender->bind(sends, {"test", 1});
  receiver->bind(receives, {"test", 1});
  EXPECT_EQ(receiver->storesOf(0), Stores::kStreaming);
  EXPECT_EQ(receiver->storesOf(1), Stores::kCached);
  runToEnd(*sender, *receiver);
  EXPECT_EQ(out1, first);
  EXPECT_EQ(out2, second);
}

// A call repeated on another buffer (the communicator's fast path) sets its one plan's threshold again; a reset
// forgets the plans' thresholds with their steps.
TEST(EngineStreaming, ARepeatedCallTakesItsNewThresholdAndAResetForgetsIt) {
  testing::FifoPair pair(transport::FifoConnection::Direct::kNone);
  auto sender = pair.execution(0), receiver = pair.execution(1);
  std::vector<int32_t> in(kBytes / 4), out(kBytes / 4, -1);
  std::iota(in.begin(), in.end(), 7);
  sender->bind(sendAll(kBytes), from(in.data()), {"test", 1});
  receiver->bind(receiveAll(kBytes), into(out.data(), kStreamingThreshold), {"test", 1});
  EXPECT_EQ(receiver->storesOf(0), Stores::kCached);
  runToEnd(*sender, *receiver);
  EXPECT_EQ(out, in);

  std::fill(out.begin(), out.end(), -1);
  sender->rewind(2);
  receiver->setStreamingFrom(0, 64 << 10);
  receiver->rewind(2);
  EXPECT_EQ(receiver->storesOf(0), Stores::kStreaming);
  runToEnd(*sender, *receiver);
  EXPECT_EQ(out, in);

  receiver->bind(receiveAll(kBytes), into(out.data(), kStreamingThreshold), {"test", 3});
  EXPECT_EQ(receiver->storesOf(0), Stores::kCached);
}

using Clock = FarReaderStores::Clock;
using std::chrono::microseconds;

constexpr size_t kPiece = Pieces::kBulk;
// 256 KiB in 64 µs is 4 GB/s (far apart measured 4-7); in 8 µs 32 GB/s (close: 30-36).
constexpr auto kFar = microseconds(64), kClose = microseconds(8);

void slowPieces(FarReaderStores& stores, int n, Clock::time_point t) {
  for (int i = 0; i < n; ++i) stores.plainPieceTook(kPiece, kFar, t);
}

TEST(FarReaderStores, SlowPiecesInARowStreamForAWhile) {
  FarReaderStores stores;
  const auto t = Clock::now();
  EXPECT_FALSE(stores.streaming(t));
  slowPieces(stores, FarReaderStores::kSlowInARow - 1, t);
  EXPECT_FALSE(stores.streaming(t)) << "a few slow pieces may be preemptions";
  slowPieces(stores, 1, t);
  EXPECT_TRUE(stores.streaming(t));
  EXPECT_TRUE(stores.streaming(t + FarReaderStores::kStreamFor - microseconds(1)));
  EXPECT_FALSE(stores.streaming(t + FarReaderStores::kStreamFor)) << "then plain pieces are timed again";
}

TEST(FarReaderStores, AFastPieceBetweenSlowOnesKeepsPlainStores) {
  FarReaderStores stores;
  const auto t = Clock::now();
  for (int i = 0; i < 10; ++i) {
    slowPieces(stores, FarReaderStores::kSlowInARow - 1, t);
    stores.plainPieceTook(kPiece, kClose, t);
    stores.plainPieceTook(kPiece, Clock::duration::zero(), t);  // a clock that did not move says nothing slow
  }
  EXPECT_FALSE(stores.streaming(t));
  // 7 MiB in 1048.576 µs is exactly 7 GB/s: not slow; a microsecond more is.
  for (int i = 0; i < FarReaderStores::kSlowInARow; ++i) stores.plainPieceTook(7 << 20, microseconds(1048), t);
  EXPECT_FALSE(stores.streaming(t));
  for (int i = 0; i < FarReaderStores::kSlowInARow; ++i) stores.plainPieceTook(7 << 20, microseconds(1049), t);
  EXPECT_TRUE(stores.streaming(t));
}

// Pieces of 16-64 KiB: one in kSampleEvery is timed, the ones between take the stores the last timed one was given;
// from 64 KiB every piece is timed.
TEST(FarReaderStores, MidSizePiecesAreTimedOneInSeveral) {
  FarReaderStores stores;
  int timed = 0;
  for (unsigned i = 0; i < 4 * FarReaderStores::kSampleEvery; ++i) timed += stores.timed(FarReaderStores::kSampledFrom);
  EXPECT_EQ(timed, 4);
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(stores.timed(FarReaderStores::kTimedFrom));
  const auto t = Clock::now();
  slowPieces(stores, FarReaderStores::kSlowInARow, t);
  EXPECT_FALSE(stores.lastStreaming()) << "the pieces between follow the last decision taken with the clock";
  EXPECT_TRUE(stores.streaming(t));
  EXPECT_TRUE(stores.lastStreaming());
  EXPECT_FALSE(stores.streaming(t + FarReaderStores::kStreamFor));
  EXPECT_FALSE(stores.lastStreaming());
}

// Pieces stored with streaming stores into the FIFO arrive exact, whole and in order, with the switch back to plain
// stores in the middle of a send (each piece is stored one way or the other).
TEST(EngineStreaming, PiecesStoredWithStreamingStoresForAFarReaderArriveExact) {
  testing::FifoPair pair(transport::FifoConnection::Direct::kNone);
  auto sender = pair.execution(0), receiver = pair.execution(1);
  // Pieces as large as the pair's 64 KiB FIFO (timed ones), then a tail that is not a whole line.
  constexpr size_t kLarge = 3 * kPiece + 4096 + 52;
  std::vector<uint8_t> in(kLarge), out(kLarge, 0);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint8_t>(i * 31 + 7);
  const auto now = Clock::now();
  slowPieces(sender->farReaderStores(1), FarReaderStores::kSlowInARow, now);
  ASSERT_TRUE(sender->farReaderStores(1).streaming(now));
  for (int call = 1; call <= 2; ++call) {
    sender->bind(sendAll(kLarge), from(in.data()), {"test", static_cast<uint64_t>(call)});
    receiver->bind(receiveAll(kLarge), into(out.data(), kStreamingThreshold), {"test", static_cast<uint64_t>(call)});
    runToEnd(*sender, *receiver);
    EXPECT_EQ(out, in) << "call " << call;
    std::fill(out.begin(), out.end(), 0);
    std::this_thread::sleep_until(now + FarReaderStores::kStreamFor);  // the second call stores plainly again
  }
}

// Each connection judges its own stores: pieces that crawl into one peer's FIFO (its core far away) switch that
// connection to streaming stores and leave the others plain; a call sending to both arrives exact at both.
TEST(EngineStreaming, EachPeerIsJudgedByItsOwnPieces) {
  testing::FifoPair near(transport::FifoConnection::Direct::kNone), far(transport::FifoConnection::Direct::kNone);
  transport::Connection* toNear = near.toOne.get();
  transport::Connection* toFar = far.toOne.get();
  Execution sender(
      0, [&](int peer) { return peer == 1 ? toNear : toFar; }, nullptr);
  auto nearReceiver = near.execution(1), farReceiver = far.execution(1);
  const auto now = Clock::now();
  slowPieces(sender.farReaderStores(2), FarReaderStores::kSlowInARow, now);
  EXPECT_TRUE(sender.farReaderStores(2).streaming(now));
  EXPECT_FALSE(sender.farReaderStores(1).streaming(now)) << "the near peer's pieces were not slow";

  constexpr size_t kLarge = 2 * kPiece + 4096 + 20;
  std::vector<uint8_t> in(kLarge), outNear(kLarge, 0), outFar(kLarge, 0);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint8_t>(i * 13 + 5);
  Plan both;
  both.add({StepKind::kSend, 1, {BufferKind::kSend, 0}, {}, kLarge});
  both.add({StepKind::kSend, 2, {BufferKind::kSend, 0}, {}, kLarge});
  sender.bind(both, from(in.data()), {"test", 1});
  nearReceiver->bind(receiveAll(kLarge), into(outNear.data(), kStreamingThreshold), {"test", 1});
  farReceiver->bind(receiveAll(kLarge), into(outFar.data(), kStreamingThreshold), {"test", 1});
  for (int round = 0; round < 1000000 && !(sender.done() && nearReceiver->done() && farReceiver->done()); ++round) {
    bool moved = false;
    ASSERT_TRUE(sender.advance(&moved).isOk());
    ASSERT_TRUE(nearReceiver->advance(&moved).isOk());
    ASSERT_TRUE(farReceiver->advance(&moved).isOk());
  }
  ASSERT_TRUE(sender.done() && nearReceiver->done() && farReceiver->done());
  EXPECT_EQ(outNear, in);
  EXPECT_EQ(outFar, in);
}

// A connection that remembers what the engine told it about the call's peers and the sizes of the pieces it
// published, passing the rest through.
class Recording final : public transport::Connection {
 public:
  explicit Recording(transport::Connection* inner) : inner_(inner) {}
  std::span<std::byte> sendSpace() override { return inner_->sendSpace(); }
  void commitSend(size_t bytes) override {
    published.push_back(bytes);
    inner_->commitSend(bytes);
  }
  std::span<const std::byte> recvData() override { return inner_->recvData(); }
  void consumeRecv(size_t bytes) override { inner_->consumeRecv(bytes); }
  Status progress(bool* moved) override { return inner_->progress(moved); }
  Status checkPeer() override { return inner_->checkPeer(); }
  bool peerClosed() override { return inner_->peerClosed(); }
  void close() override { inner_->close(); }
  bool sendDrained() override { return inner_->sendDrained(); }
  bool addPollFds(std::vector<struct pollfd>* fds) override { return inner_->addPollFds(fds); }
  const char* transportName() const override { return inner_->transportName(); }
  void writesToPeers(int peers) override { told = peers; }
  int told = 0;
  std::vector<size_t> published;

 private:
  transport::Connection* inner_;
};

// Each bound call tells the connections it writes to how many peers it writes to (the FIFOs' laps depend on it,
// transports/fifo_lap.hpp); a connection the call only reads from, or does not use, is not told.
TEST(EngineStreaming, ConnectionsLearnHowManyPeersACallWritesTo) {
  testing::FifoPair one, two, three;
  Recording to1(one.toOne.get()), to2(two.toOne.get()), to3(three.toOne.get());
  Recording* to[] = {nullptr, &to1, &to2, &to3};
  Execution rank0(
      0, [&](int peer) -> transport::Connection* { return to[peer]; }, nullptr);
  std::vector<uint8_t> in(1024), out(1024);
  Plan p;
  p.add({StepKind::kSend, 1, {BufferKind::kSend, 0}, {}, 512});
  p.add({StepKind::kSend, 2, {BufferKind::kSend, 512}, {}, 512});
  p.add({StepKind::kRecv, 3, {}, {BufferKind::kRecv, 0}, 512});
  const CallSignature signature{};
  rank0.bind(p, {in.data(), out.data(), nullptr, nullptr, 1}, {"test", 1, 0, &signature});
  EXPECT_EQ(to1.told, 2);
  EXPECT_EQ(to2.told, 2);
  EXPECT_EQ(to3.told, 0) << "only read from";

  Plan ring;
  ring.add({StepKind::kSend, 1, {BufferKind::kSend, 0}, {}, 512});
  ring.add({StepKind::kRecv, 3, {}, {BufferKind::kRecv, 0}, 512});
  rank0.bind(ring, {in.data(), out.data(), nullptr, nullptr, 1}, {"test", 2, 0, &signature});
  EXPECT_EQ(to1.told, 1);
  EXPECT_EQ(to2.told, 2) << "not written in this call: left as it was";
}

// A step of up to 256 KiB is published in pieces of 64 KiB where ranks have cores of their own, so that the reader
// copies one out while the next goes in; where ranks share cores, and for larger steps, in pieces of 256 KiB. The
// bytes arrive exact either way.
TEST(EngineStreaming, MidSizeStepsGoInSmallerPiecesWhereRanksHaveCores) {
  struct Case {
    size_t bytes;
    bool ranksShareCores;
    std::vector<size_t> pieces;
  };
  constexpr size_t k64 = 64 << 10, k256 = 256 << 10;
  const Case cases[] = {
      {k256, false, {k64, k64, k64, k64}},  // a core per rank
      {k256, true, {k256}},                 // ranks sharing cores
      {100 << 10, false, {k64, 36 << 10}},  // the rest of a step in the last piece
      {2 * k256, false, {k256, k256}},      // larger steps: bulk pieces either way
      {2 * k256, true, {k256, k256}},
  };
  for (const Case& c : cases) {
    testing::FifoPair pair(transport::FifoConnection::Direct::kNone, 1 << 20);
    Recording toOne(pair.toOne.get());
    ExecutionSettings settings;
    settings.pieces = {c.ranksShareCores};
    Execution sender(
        0, [&](int) -> transport::Connection* { return &toOne; }, nullptr, settings);
    auto receiver = pair.execution(1);
    std::vector<uint8_t> in(c.bytes), out(c.bytes, 0);
    for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint8_t>(i * 7 + 3);
    sender.bind(sendAll(c.bytes), from(in.data()), {"test", 1});
    receiver->bind(receiveAll(c.bytes), into(out.data(), kStreamingThreshold), {"test", 1});
    runToEnd(sender, *receiver);
    std::vector<size_t> data;  // the call header and the pieces: the data's are the ones of 16 KiB and more
    for (size_t bytes : toOne.published)
      if (bytes >= (16 << 10)) data.push_back(bytes);
    EXPECT_EQ(data, c.pieces) << c.bytes << " bytes, ranks sharing cores: " << c.ranksShareCores;
    EXPECT_EQ(out, in);
  }
}

}  // namespace
}  // namespace chorus::engine

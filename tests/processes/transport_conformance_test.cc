// One suite for every registered transport (transports/registry.hpp): ranks connected exactly as a communicator
// connects them (transports/peer_mesh.hpp, the transport forced), then the Connection interface exercised directly.
// A transport that cannot run here skips with its reason; loopback, which runs anywhere, is the reference.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/bootstrap.hpp"
#include "bootstrap/id_handoff.hpp"
#include "core/deadline.hpp"
#include "core/settings.hpp"
#include "transports/peer_mesh.hpp"
#include "transports/registry.hpp"
#include "transports/settings.hpp"

namespace chorus::testing {
namespace {

using transport::Connection;
using transport::DirectTransfers;
using transport::MemoryType;
using transport::Registration;
using transport::RemoteRegion;
using Clock = std::chrono::steady_clock;

// The smallest FIFOs the transports take (64 KiB): every transfer below wraps around many times.
Settings forcing(const std::string& name) {
  std::string error;
  Settings s = settings().withOverrides({{"CHORUS_TRANSPORT", name},
                                         {"CHORUS_LOOPBACK_BUFFER", "64K"},
                                         {"CHORUS_SHM_BUFFER", "64K"},
                                         {"CHORUS_TCP_BUFFER", "64K"},
                                         {"CHORUS_DIRECT_THRESHOLD", "1"},
                                         {"CHORUS_SHM_CMA", "1"}},
                                        &error);
  EXPECT_EQ(error, "");
  s.set(kTimeout, 30.0);
  return s;
}

// Rank `rank` of `nranks` joined through `id` and connected with `s` (a transport forced).
Status connectRank(const UniqueId& id, int nranks, int rank, const Settings& s, transport::PeerMesh* mesh) {
  std::unique_ptr<bootstrap::Bootstrap> bs;
  CHORUS_TRY(bootstrap::Bootstrap::join(id, nranks, rank, &bs));
  CHORUS_TRY(transport::connectPeerMesh(*bs, rank, nranks, s, mesh));
  return bs->barrier("connected");
}
Status connectRank(const UniqueId& id, int nranks, int rank, const std::string& transport, transport::PeerMesh* mesh) {
  return connectRank(id, nranks, rank, forcing(transport), mesh);
}

// `nranks` ranks as threads of this process, each rank's mesh in meshes[rank].
void connectThreads(int nranks, const Settings& s, std::vector<transport::PeerMesh>* meshes) {
  UniqueId id;
  ASSERT_TRUE(UniqueId::create(&id).isOk());
  meshes->clear();
  meshes->resize(nranks);
  std::vector<Status> results(nranks);
  std::vector<std::thread> ranks;
  for (int r = 0; r < nranks; ++r)
    ranks.emplace_back([&, r] { results[r] = connectRank(id, nranks, r, s, &(*meshes)[r]); });
  for (auto& t : ranks) t.join();
  for (int r = 0; r < nranks; ++r) ASSERT_TRUE(results[r].isOk()) << "rank " << r << ": " << results[r].message();
}

std::vector<std::byte> pattern(size_t bytes, int seed) {
  std::vector<std::byte> v(bytes);
  for (size_t i = 0; i < bytes; ++i) v[i] = static_cast<std::byte>((i * 131 + seed * 17 + i / 251) & 0xff);
  return v;
}

// One direction of a stream being driven: what is left to send, and what arrived.
struct Flow {
  Flow(Connection* from, Connection* to, std::vector<std::byte> data) : from(from), to(to), data(std::move(data)) {}
  Connection* from;
  Connection* to;
  std::vector<std::byte> data;
  size_t sent = 0;
  std::vector<std::byte> arrived;
  bool done() const { return arrived.size() == data.size(); }
};

// Drives every flow from one thread until all arrived: writes what fits, lets both ends progress, reads what came.
// Fails on a transport error or after 30 s.
::testing::AssertionResult drive(std::vector<Flow>& flows) {
  const auto end = Clock::now() + std::chrono::seconds(30);
  while (true) {
    bool all = true;
    for (Flow& f : flows) {
      if (f.sent < f.data.size()) {
        auto space = f.from->sendSpace();
        const size_t n = std::min(space.size(), f.data.size() - f.sent);
        if (n > 0) {
          memcpy(space.data(), f.data.data() + f.sent, n);
          f.from->commitSend(n);
          f.sent += n;
        }
      }
      bool moved = false;
      for (Connection* c : {f.from, f.to}) {
        Status st = c->progress(&moved);
        if (!st.isOk()) return ::testing::AssertionFailure() << "progress: " << st.message();
      }
      auto in = f.to->recvData();
      const size_t n = std::min(in.size(), f.data.size() - f.arrived.size());
      f.arrived.insert(f.arrived.end(), in.begin(), in.begin() + static_cast<ptrdiff_t>(n));
      f.to->consumeRecv(n);
      all = all && f.done();
    }
    if (all) break;
    if (Clock::now() > end) return ::testing::AssertionFailure() << "no progress for 30 s";
  }
  for (const Flow& f : flows)
    if (f.arrived != f.data) return ::testing::AssertionFailure() << "bytes arrived out of order or changed";
  return ::testing::AssertionSuccess();
}

class TransportConformance : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const transport::TransportKind* kind = transport::findTransportKind(GetParam());
    ASSERT_NE(kind, nullptr);
    if (std::string why = kind->unavailable(); !why.empty()) GTEST_SKIP() << GetParam() << ": " << why;
  }
  // Rank 0's and rank 1's connection to each other.
  void connectPair() {
    connectThreads(2, forcing(GetParam()), &meshes_);
    if (HasFatalFailure()) return;
    a_ = meshes_[0].connections[1].get();
    b_ = meshes_[1].connections[0].get();
    ASSERT_STREQ(a_->transportName(), GetParam().c_str());
  }
  std::vector<transport::PeerMesh> meshes_;
  Connection* a_ = nullptr;
  Connection* b_ = nullptr;
};

TEST_P(TransportConformance, AStreamKeepsItsBytesInOrderAcrossWraparound) {
  connectPair();
  if (HasFatalFailure()) return;
  int seed = 0;
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{3}, size_t{63}, size_t{64}, size_t{65}, size_t{4095}, size_t{65537},
                       size_t{(1 << 20) + 13}, size_t{4 << 20}}) {
    std::vector<Flow> there{{a_, b_, pattern(bytes, ++seed)}};
    ASSERT_TRUE(drive(there)) << bytes << " bytes from rank 0 to 1";
    std::vector<Flow> back{{b_, a_, pattern(bytes, ++seed)}};
    ASSERT_TRUE(drive(back)) << bytes << " bytes from rank 1 to 0";
  }
}

TEST_P(TransportConformance, BothDirectionsAtOnce) {
  connectPair();
  if (HasFatalFailure()) return;
  std::vector<Flow> flows{{a_, b_, pattern(3 << 20, 1)}, {b_, a_, pattern((2 << 20) + 7, 2)}};
  ASSERT_TRUE(drive(flows));
}

// Small messages keep their order and their boundaries, a head and a body arrive as one message, and peek() shows
// a message's start without taking it. More messages than a channel holds at once.
TEST_P(TransportConformance, SmallMessagesArriveWholeAndInOrder) {
  connectPair();
  if (HasFatalFailure()) return;
  transport::SmallMessages* out = a_->smallMessages();
  transport::SmallMessages* in = b_->smallMessages();
  if (!out || !in) GTEST_SKIP() << GetParam() << " has no small-message channel";
  const size_t limit = std::min(out->limit(), in->limit());
  const uint32_t head = 0xc0ffee;
  const auto end = Clock::now() + std::chrono::seconds(30);
  size_t sent = 0, taken = 0;
  constexpr size_t kMessages = 500;
  auto sizeOf = [&](size_t k) { return sizeof(head) + k * 37 % (limit - sizeof(head)) + 1; };
  while (taken < kMessages && Clock::now() < end) {
    bool moved = false;
    ASSERT_TRUE(a_->progress(&moved).isOk());
    ASSERT_TRUE(b_->progress(&moved).isOk());
    if (sent < kMessages) {
      const std::vector<std::byte> body = pattern(sizeOf(sent) - sizeof(head), static_cast<int>(sent));
      if (out->send(&head, sizeof(head), body.data(), body.size())) ++sent;
    }
    if (!in->waiting()) continue;
    uint32_t first = 0;
    ASSERT_TRUE(in->peek(&first, sizeof(first)));
    EXPECT_EQ(first, head) << "message " << taken;
    std::vector<std::byte> got(sizeOf(taken));
    ASSERT_TRUE(in->recv(got.data(), got.size()));
    const std::vector<std::byte> body = pattern(got.size() - sizeof(head), static_cast<int>(taken));
    ASSERT_TRUE(std::equal(body.begin(), body.end(), got.begin() + sizeof(head))) << "message " << taken;
    ++taken;
  }
  EXPECT_EQ(taken, kMessages) << "no progress for 30 s";
}

// Every rank of four streams to each of the others at once, each rank driving its own connections.
TEST_P(TransportConformance, ManyConnectionsAtOnce) {
  constexpr int kRanks = 4;
  connectThreads(kRanks, forcing(GetParam()), &meshes_);
  if (HasFatalFailure()) return;
  // Flow (from, to) is driven by both ranks' threads in turn: each side only touches its own connection.
  std::vector<::testing::AssertionResult> results(kRanks, ::testing::AssertionSuccess());
  std::vector<std::thread> ranks;
  for (int r = 0; r < kRanks; ++r) {
    ranks.emplace_back([&, r] {
      constexpr size_t kBytes = 300000;  // plus the receiver's rank, so that every pair's length differs
      std::vector<std::vector<std::byte>> outgoing(kRanks), incoming(kRanks);
      std::vector<size_t> sent(kRanks, 0);
      for (int p = 0; p < kRanks; ++p) outgoing[p] = pattern(p == r ? 0 : kBytes + p, r * kRanks + p);
      const auto end = Clock::now() + std::chrono::seconds(30);
      // Done when every byte arrived and every byte sent was delivered: a rank that stops making progress earlier may
      // hold bytes its peers still wait for (as a rank that leaves a call before its sends drained would).
      auto finished = [&] {
        for (int p = 0; p < kRanks; ++p) {
          if (p == r) continue;
          if (sent[p] < outgoing[p].size() || incoming[p].size() < kBytes + r) return false;
          if (!meshes_[r].connections[p]->sendDrained()) return false;
        }
        return true;
      };
      while (!finished()) {
        if (Clock::now() > end) {
          results[r] = ::testing::AssertionFailure() << "rank " << r << ": no progress for 30 s";
          return;
        }
        for (int p = 0; p < kRanks; ++p) {
          if (p == r) continue;
          Connection* c = meshes_[r].connections[p].get();
          auto space = c->sendSpace();
          const size_t n = std::min(space.size(), outgoing[p].size() - sent[p]);
          memcpy(space.data(), outgoing[p].data() + sent[p], n);
          if (n > 0) c->commitSend(n);
          sent[p] += n;
          bool moved = false;
          if (Status st = c->progress(&moved); !st.isOk()) {
            results[r] = ::testing::AssertionFailure() << "rank " << r << ": " << st.message();
            return;
          }
          auto in = c->recvData();
          const size_t take = std::min(in.size(), kBytes + r - incoming[p].size());
          incoming[p].insert(incoming[p].end(), in.begin(), in.begin() + static_cast<ptrdiff_t>(take));
          c->consumeRecv(take);
        }
        std::this_thread::yield();
      }
      for (int p = 0; p < kRanks; ++p)
        if (p != r && incoming[p] != pattern(kBytes + r, p * kRanks + r))
          results[r] = ::testing::AssertionFailure() << "rank " << r << ": bytes from rank " << p << " differ";
    });
  }
  for (auto& t : ranks) t.join();
  for (int r = 0; r < kRanks; ++r) EXPECT_TRUE(results[r]);
}

// A direct transfer as the engine runs one: the sender registers its whole buffer, posts `bytes` at `offset` in it
// and sends the region's peer bytes on the stream (length first); the receiver reads the bytes outside the stream
// through that region, then takes the announcement.
::testing::AssertionResult directTransfer(Connection* from, Connection* to, size_t bytes, int seed, size_t offset = 0,
                                          transport::Stores stores = transport::Stores::kCached) {
  DirectTransfers* sender = from->directTransfers();
  DirectTransfers* receiver = to->directTransfers();
  if (!sender || !receiver) return ::testing::AssertionFailure() << "only one side offers direct transfers";
  const std::vector<std::byte> source = pattern(offset + bytes, seed);
  std::vector<std::byte> target(bytes);
  std::shared_ptr<const Registration> region;
  if (Status st = sender->registerMemory(source.data(), source.size(), MemoryType::kHost, &region); !st.isOk())
    return ::testing::AssertionFailure() << "registerMemory: " << st.message();
  const uint64_t peerBytes = region->peerBytes.size();
  const uint64_t ackTarget = sender->post(*region, offset, bytes);
  // The announcement goes whole, then the receiver pulls until every byte is there.
  auto space = from->sendSpace();
  if (space.size() < sizeof(peerBytes) + peerBytes) return ::testing::AssertionFailure() << "no room for the region";
  memcpy(space.data(), &peerBytes, sizeof(peerBytes));
  if (peerBytes > 0) memcpy(space.data() + sizeof(peerBytes), region->peerBytes.data(), peerBytes);
  from->commitSend(sizeof(peerBytes) + peerBytes);
  size_t done = 0;
  const auto end = Clock::now() + std::chrono::seconds(30);
  RemoteRegion remote;
  bool announced = false;
  while (done < bytes || sender->acked() < ackTarget) {
    if (Clock::now() > end) return ::testing::AssertionFailure() << "direct transfer stalled at " << done;
    bool moved = false;
    for (Connection* c : {from, to}) {
      if (Status st = c->progress(&moved); !st.isOk()) return ::testing::AssertionFailure() << st.message();
    }
    if (!announced) {
      auto in = to->recvData();
      uint64_t length = 0;
      if (in.size() < sizeof(length)) continue;
      memcpy(&length, in.data(), sizeof(length));
      if (length != peerBytes) return ::testing::AssertionFailure() << "announced " << length << " peer bytes";
      if (in.size() < sizeof(length) + length) continue;
      remote.peerBytes.assign(in.begin() + sizeof(length),
                              in.begin() + static_cast<ptrdiff_t>(sizeof(length) + length));
      to->consumeRecv(sizeof(length) + length);
      announced = true;
    }
    if (done < bytes) {
      size_t n = 0;
      Status st = receiver->read(target.data() + done, remote, offset + done, bytes - done, stores, &n);
      if (!st.isOk()) return ::testing::AssertionFailure() << "read: " << st.message();
      done += n;
    }
  }
  if (!std::equal(target.begin(), target.end(), source.begin() + static_cast<ptrdiff_t>(offset)))
    return ::testing::AssertionFailure() << "direct bytes differ";
  return ::testing::AssertionSuccess();
}

TEST_P(TransportConformance, DirectTransfersInBothDirections) {
  connectPair();
  if (HasFatalFailure()) return;
  if (!a_->directTransfers()) GTEST_SKIP() << GetParam() << " makes no direct transfers";
  for (auto stores : {transport::Stores::kCached, transport::Stores::kStreaming}) {
    const char* how = stores == transport::Stores::kCached ? "" : ", streaming stores";
    for (size_t bytes : {size_t{1}, size_t{4097}, size_t{(8 << 20) + 3}}) {
      EXPECT_TRUE(directTransfer(a_, b_, bytes, 1, 0, stores)) << bytes << " bytes from rank 0 to 1" << how;
      EXPECT_TRUE(directTransfer(b_, a_, bytes, 2, 0, stores)) << bytes << " bytes from rank 1 to 0" << how;
    }
  }
}

// A transfer names an offset inside a registered region: the bytes come from there, not from the region's start.
TEST_P(TransportConformance, DirectTransfersReadAtAnOffsetOfTheirRegion) {
  connectPair();
  if (HasFatalFailure()) return;
  if (!a_->directTransfers()) GTEST_SKIP() << GetParam() << " makes no direct transfers";
  for (size_t offset : {size_t{1}, size_t{4096}, size_t{(1 << 20) + 17}}) {
    EXPECT_TRUE(directTransfer(a_, b_, 65537, 3, offset)) << "offset " << offset;
    EXPECT_TRUE(directTransfer(a_, b_, 65537, 3, offset, transport::Stores::kStreaming)) << "offset " << offset;
  }
}

// A descriptor naming bytes outside the region the peer announced (a corrupt stream, or a peer running other code)
// is an error, never a read of whatever memory lies there. tcp reads nothing by address: its region is empty.
TEST_P(TransportConformance, ARangeOutsideTheAnnouncedRegionIsRefused) {
  connectPair();
  if (HasFatalFailure()) return;
  if (!a_->directTransfers()) GTEST_SKIP() << GetParam() << " makes no direct transfers";
  std::vector<std::byte> source(4096), target(4096);
  std::shared_ptr<const Registration> region;
  ASSERT_TRUE(a_->directTransfers()->registerMemory(source.data(), 1024, MemoryType::kHost, &region).isOk());
  if (region->peerBytes.empty()) GTEST_SKIP() << GetParam() << " reaches no memory by address";
  RemoteRegion remote{region->peerBytes, nullptr};
  for (auto [offset, bytes] : {std::pair<size_t, size_t>{1000, 25}, {1025, 1}, {0, 4096}}) {
    size_t done = 0;
    Status st = b_->directTransfers()->read(target.data(), remote, offset, bytes, transport::Stores::kCached, &done);
    EXPECT_FALSE(st.isOk()) << bytes << " bytes at " << offset << " of a 1024-byte region";
    EXPECT_EQ(done, 0u);
  }
  RemoteRegion garbage{std::vector<std::byte>(3), nullptr};
  size_t done = 0;
  EXPECT_FALSE(b_->directTransfers()->read(target.data(), garbage, 0, 1, transport::Stores::kCached, &done).isOk());
}

// What a closing peer sent before it closed stays readable; then its end is seen. (The receiver makes progress
// meanwhile, as a waiting rank does: some transports need both sides' progress to move bytes at all.)
TEST_P(TransportConformance, APeerThatClosesIsSeenAfterItsLastBytes) {
  connectPair();
  if (HasFatalFailure()) return;
  const std::vector<std::byte> last = pattern(10000, 9);
  std::vector<std::byte> arrived;
  auto receive = [&] {
    bool moved = false;
    Status st = b_->progress(&moved);
    auto in = b_->recvData();
    arrived.insert(arrived.end(), in.begin(), in.end());
    b_->consumeRecv(in.size());
    return st;
  };
  size_t sent = 0;
  const auto end = Clock::now() + std::chrono::seconds(30);
  while (sent < last.size() || !a_->sendDrained()) {
    ASSERT_LT(Clock::now(), end) << "the last bytes never left";
    auto space = a_->sendSpace();
    const size_t n = std::min(space.size(), last.size() - sent);
    memcpy(space.data(), last.data() + sent, n);
    if (n > 0) a_->commitSend(n);
    sent += n;
    bool moved = false;
    ASSERT_TRUE(a_->progress(&moved).isOk());
    ASSERT_TRUE(receive().isOk());
  }
  a_->close();
  bool seenClosed = false;
  while (!seenClosed) {
    ASSERT_LT(Clock::now(), end) << "the close was never seen; " << arrived.size() << " bytes arrived";
    Status st = receive();
    seenClosed = (!st.isOk() || b_->peerClosed()) && arrived.size() == last.size();
  }
  EXPECT_EQ(arrived, last);
}

// A peer process killed after connecting is reported by progress or checkPeer within 10 s.
TEST_P(TransportConformance, AKilledPeerIsReported) {
  if (GetParam() == "loopback") GTEST_SKIP() << "loopback joins ranks of one process only";
  bootstrap::IdHandoff handoff;
  ASSERT_TRUE(handoff.open().isOk());
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    UniqueId id;
    transport::PeerMesh mesh;
    if (!handoff.receive(&id).isOk() || !connectRank(id, 2, 1, GetParam(), &mesh).isOk()) _exit(1);
    pause();  // until killed
    _exit(0);
  }
  UniqueId id;
  ASSERT_TRUE(handoff
                  .handOver(
                      [&](UniqueId* made) {
                        Status st = UniqueId::create(made);
                        id = *made;
                        return st;
                      },
                      1)
                  .isOk());
  transport::PeerMesh mesh;
  Status connected = connectRank(id, 2, 0, GetParam(), &mesh);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  ASSERT_TRUE(connected.isOk()) << connected.message();
  Connection* c = mesh.connections[1].get();
  const auto start = Clock::now();
  Status seen;
  while (seen.isOk() && !c->peerClosed() && Clock::now() - start < std::chrono::seconds(10)) {
    bool moved = false;
    seen = c->progress(&moved);
    if (seen.isOk()) seen = c->checkPeer();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_TRUE(!seen.isOk() || c->peerClosed()) << "a killed peer went unnoticed for 10 s";
  if (!seen.isOk()) {
    EXPECT_NE(seen.message().find("rank 1"), std::string::npos) << seen.message();
  }
}

std::vector<std::string> registeredNames() {
  std::vector<std::string> names;
  for (const transport::TransportKind* kind : transport::transportKinds()) names.push_back(kind->name);
  return names;
}

INSTANTIATE_TEST_SUITE_P(Registered, TransportConformance, ::testing::ValuesIn(registeredNames()),
                         [](const auto& info) { return info.param; });

// An unknown forced transport is an error that names the registered ones.
TEST(TransportRegistry, ForcedTransportsAreChecked) {
  UniqueId id;
  ASSERT_TRUE(UniqueId::create(&id).isOk());
  std::unique_ptr<bootstrap::Bootstrap> bs;
  ASSERT_TRUE(bootstrap::Bootstrap::join(id, 1, 0, &bs).isOk());
  transport::PeerMesh mesh;
  Status st = transport::connectPeerMesh(*bs, 0, 1, forcing("carrier-pigeon"), &mesh);
  EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(st.message().find("CHORUS_TRANSPORT='carrier-pigeon' is not one of " + transport::transportNameList()),
            std::string::npos)
      << st.message();
  for (const char* name : {"loopback", "shm", "tcp"})
    EXPECT_NE(transport::transportNameList().find(name), std::string::npos) << name;
}

// CHORUS_DIRECT_THRESHOLD unset leaves direct transfers on, from the transport's own threshold; 0 turns them off.
TEST(TransportRegistry, DirectTransfersFollowTheThresholdSetting) {
  Settings s = forcing("tcp");
  s.set(transport::kDirectThreshold, int64_t{-1});  // unset
  std::vector<transport::PeerMesh> meshes;
  connectThreads(2, s, &meshes);
  if (HasFatalFailure()) return;
  DirectTransfers* direct = meshes[0].connections[1]->directTransfers();
  ASSERT_NE(direct, nullptr);
  EXPECT_EQ(direct->threshold(), size_t{256} << 10);
  s.set(transport::kDirectThreshold, int64_t{0});
  connectThreads(2, s, &meshes);
  if (HasFatalFailure()) return;
  EXPECT_EQ(meshes[0].connections[1]->directTransfers(), nullptr);
}

}  // namespace
}  // namespace chorus::testing

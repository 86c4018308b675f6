// loopback: ranks of one communicator that live in the same process. Both FIFOs of a pair are plain heap memory;
// the first of the two ranks to arrive creates them in a process-wide table, the second takes them out.
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <map>
#include <mutex>
#include <tuple>

#include "core/deadline.hpp"
#include "transports/fifo_connection.hpp"
#include "transports/registry.hpp"
#include "transports/settings.hpp"

namespace chorus::transport {
namespace {

struct PairMemory {
  size_t fifoBytes = 0;
  void* memory = nullptr;
  ~PairMemory() { free(memory); }
};

struct Rendezvous {
  std::mutex mutex;
  std::condition_variable cv;
  // (comm, low rank, high rank) -> memory, present between the first and the second arrival.
  std::map<std::tuple<uint64_t, int, int>, std::shared_ptr<PairMemory>> pending;
};

Rendezvous& rendezvous() {
  static Rendezvous r;
  return r;
}

class LoopbackTransport final : public Transport {
 public:
  Status connect(const ConnectContext& ctx, const std::vector<int>& peers,
                 std::vector<std::unique_ptr<Connection>>* out) override {
    const Settings& cfg = *ctx.settings;
    const size_t fifoBytes = fifoBytesFor(cfg[kLoopbackBuffer], ctx.nranks);
    out->clear();
    const FifoLaps laps = fifoLaps(ctx);
    for (int peer : peers) {
      std::shared_ptr<PairMemory> pair = takeOrCreate(ctx, peer, fifoBytes);
      const size_t one = Fifo::bytesFor(pair->fifoBytes);
      std::byte* base = static_cast<std::byte*>(pair->memory);
      // FIFO 0 carries low -> high, FIFO 1 high -> low.
      bool low = ctx.rank < peer;
      Fifo lowToHigh(base, pair->fifoBytes, false), highToLow(base + one, pair->fifoBytes, false);
      out->push_back(std::make_unique<FifoConnection>(
          pair, low ? lowToHigh : highToLow, low ? highToLow : lowToHigh, peer, 0, "loopback",
          directTransfersOn(cfg) ? FifoConnection::Direct::kSameProcess : FifoConnection::Direct::kNone, laps));
    }
    return Status::ok();
  }

 private:
  static std::shared_ptr<PairMemory> takeOrCreate(const ConnectContext& ctx, int peer, size_t fifoBytes) {
    Rendezvous& r = rendezvous();
    auto key = std::make_tuple(ctx.commHash, std::min(ctx.rank, peer), std::max(ctx.rank, peer));
    std::lock_guard<std::mutex> lock(r.mutex);
    auto it = r.pending.find(key);
    if (it != r.pending.end()) {
      auto pair = it->second;
      r.pending.erase(it);
      return pair;
    }
    auto pair = std::make_shared<PairMemory>();
    pair->fifoBytes = fifoBytes;
    const size_t one = Fifo::bytesFor(fifoBytes);
    pair->memory = Fifo::allocate(2 * one);
    Fifo(pair->memory, fifoBytes, true);
    Fifo(static_cast<std::byte*>(pair->memory) + one, fifoBytes, true);
    r.pending[key] = pair;
    return pair;
  }
};

}  // namespace

CHORUS_REGISTER_TRANSPORT(
    loopback, {.name = "loopback",
               .preference = 0,
               .description = "ranks in one process: FIFOs in the heap, direct copies between the ranks' buffers",
               .open =
                   [](const Settings&, std::unique_ptr<Transport>* out, std::string*) {
                     *out = std::make_unique<LoopbackTransport>();
                     return Status::ok();
                   },
               .reaches =
                   [](const PeerInfo& mine, const PeerInfo& peer, std::string* why) {
                     const bool same = peer.processToken == mine.processToken;
                     *why = same ? "is in the same process" : "is another process";
                     return same;
                   }});

}  // namespace chorus::transport

// Google Benchmark of a FIFO's lap (transports/fifo_lap.hpp): two threads exchange a message through a pair of
// chorus FIFOs each iteration, as the two ranks of an AllGather do, each writing its message into its outgoing FIFO
// and then copying the other's out of the incoming one. The producer wraps early after `lap` bytes; a lap shorter
// than the reader's private cache writes into lines the reader's core still holds.
//   fifoLap/<plain|streaming>/<message bytes>/<lap bytes>: time per exchange (both messages moved).
#include <benchmark/benchmark.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <thread>
#include <vector>

#include "kernels/copy.hpp"
#include "transports/fifo.hpp"

namespace {

using chorus::transport::Fifo;

constexpr size_t kCapacity = 4 << 20;  // the shm transport's default FIFO
constexpr auto kDeadline = std::chrono::seconds(30);

struct FifoMemory {
  FifoMemory() : memory(Fifo::allocate(Fifo::bytesFor(kCapacity)), free) { Fifo(memory.get(), kCapacity, true); }
  Fifo view() { return Fifo(memory.get(), kCapacity, false); }
  std::unique_ptr<void, decltype(&free)> memory;
};

// One side of the exchange: its message into `out`, then the other's out of `in`.
struct Side {
  Fifo out, in;
  std::vector<std::byte> message, received;
  bool streaming = false;

  void exchange() {
    const auto deadline = std::chrono::steady_clock::now() + kDeadline;
    std::span<std::byte> space;
    while ((space = out.writable()).size() < message.size()) tooLate(deadline, "room in the FIFO");
    if (streaming) {
      chorus::kernels::streamingCopy(space.data(), message.data(), message.size());
    } else {
      chorus::kernels::copy(space.data(), message.data(), message.size());
    }
    out.produce(message.size());
    for (size_t got = 0; got < received.size();) {
      std::span<const std::byte> ready = in.readable();
      if (ready.empty()) {
        tooLate(deadline, "the other side's message");
        continue;
      }
      const size_t n = std::min(ready.size(), received.size() - got);
      chorus::kernels::copy(received.data() + got, ready.data(), n);
      in.consume(n);
      got += n;
    }
  }
  static void tooLate(std::chrono::steady_clock::time_point deadline, const char* waitingFor) {
    if (std::chrono::steady_clock::now() < deadline) return;
    fprintf(stderr, "bench_fifo_lap: no %s in %lld s\n", waitingFor,
            static_cast<long long>(std::chrono::duration_cast<std::chrono::seconds>(kDeadline).count()));
    std::exit(1);
  }
};

void fifoLap(benchmark::State& state, bool streaming) {
  const size_t bytes = static_cast<size_t>(state.range(0)), lap = static_cast<size_t>(state.range(1));
  FifoMemory toPeer, fromPeer;
  Side me{toPeer.view(), fromPeer.view(), std::vector<std::byte>(bytes, std::byte{1}), std::vector<std::byte>(bytes),
          streaming};
  Side peer{fromPeer.view(), toPeer.view(), std::vector<std::byte>(bytes, std::byte{2}), std::vector<std::byte>(bytes),
            streaming};
  const chorus::transport::FifoLap laps{lap, lap, ~size_t{0}};  // one lap whatever the pieces
  me.out.wrapEarly(laps);
  peer.out.wrapEarly(laps);
  // The peer stops after the exchange numbered `last`, which this thread makes after setting it.
  std::atomic<int64_t> last{std::numeric_limits<int64_t>::max()};
  std::thread other([&] {
    for (int64_t i = 1;; ++i) {
      peer.exchange();
      if (i >= last.load(std::memory_order_acquire)) return;
    }
  });
  int64_t exchanges = 0;
  for (auto _ : state) {
    me.exchange();
    ++exchanges;
  }
  last.store(exchanges + 1, std::memory_order_release);
  me.exchange();
  other.join();
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(2 * bytes));
}

const std::vector<int64_t> kLaps = {64 << 10, 512 << 10, 1 << 20, 2 << 20, 4 << 20};
BENCHMARK_CAPTURE(fifoLap, plain, false)->ArgsProduct({{16 << 10, 64 << 10}, kLaps})->UseRealTime();
BENCHMARK_CAPTURE(fifoLap, streaming, true)->ArgsProduct({{16 << 10}, kLaps})->UseRealTime();

}  // namespace

BENCHMARK_MAIN();

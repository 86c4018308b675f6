// A communicator's flight recorder: the last N operations it ran (PyTorch's flight recorder for chorus), kept in a
// ring that the thread running the calls writes without a lock and any other thread may read at any time, so that
// a dump on a timeout, a failure, SIGUSR1 or request says what every rank was doing. chorus-trace reads the dumps.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace chorus::observe {

enum class OpState : uint8_t { kStarted = 1, kCompleted = 2, kFailed = 3 };
const char* opStateName(OpState s);

/// One operation of a call (a group's operations share the sequence number).
struct FlightEntry {
  uint64_t sequence = 0;
  uint64_t count = 0;
  uint64_t payloadBytes = 0;  // TrafficCounters' payload
  uint64_t wireBytes = 0;     // what the plan sends to other ranks
  uint8_t collective = 0;     // algo::CollType
  uint8_t dtype = 0;          // DataType
  uint8_t op = 0;             // RedOpKind
  OpState state = OpState::kStarted;
  int32_t root = 0;         // root, or the peer of Send/Recv
  uint16_t groupIndex = 0;  // place in its group, of groupSize
  uint16_t groupSize = 1;
  float predictedMicros = 0;   // the cost model's prediction for the chosen algorithm
  const char* algorithm = "";  // a registered algorithm's name (static storage)
  uint64_t scheduledTick = 0;  // observe::ticks() when the call was made (queued, for async calls)
  uint64_t startedTick = 0;    // when it began to run
  uint64_t endedTick = 0;      // when it completed or failed; 0 while running
};

class FlightRecorder {
 public:
  /// Keeps the last `capacity` entries (a power of two is not required); 0 records nothing.
  explicit FlightRecorder(size_t capacity);
  size_t capacity() const { return capacity_; }

  /// Writer side: one thread at a time (the one that runs the communicator's calls). Appends an entry, a started
  /// operation or one already ended, and returns its number for finish().
  uint64_t append(const FlightEntry& e);
  /// Sets the state and end tick of entry number `index`, unless the ring has moved past it.
  void finish(uint64_t index, OpState state, uint64_t endedTick);

  /// Reader side, any thread: the entries in recording order, each read whole (one being written is retried).
  std::vector<FlightEntry> snapshot() const;

 private:
  static constexpr size_t kWords = 10;
  struct Slot {
    std::atomic<uint64_t> version{0};  // odd while being written
    std::atomic<uint64_t> words[kWords];
  };
  void write(Slot& s, const FlightEntry& e);
  bool read(const Slot& s, FlightEntry* e) const;

  size_t capacity_;
  std::unique_ptr<Slot[]> slots_;
  std::atomic<uint64_t> recorded_{0};  // entries ever started
  size_t nextSlot_ = 0;                // recorded_ % capacity_, kept by the writer
};

}  // namespace chorus::observe

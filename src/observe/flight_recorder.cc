#include "observe/flight_recorder.hpp"

#include <bit>
#include <cstddef>
#include <cstring>
#include <type_traits>

namespace chorus::observe {

const char* opStateName(OpState s) {
  switch (s) {
    case OpState::kStarted:
      return "started";
    case OpState::kCompleted:
      return "completed";
    case OpState::kFailed:
      return "failed";
  }
  return "unknown";
}

namespace {
// The entry as the ring's words: a reader copies words that a writer may be changing, so each is an atomic and a
// torn entry is caught by the slot's version (a seqlock).
struct Packed {
  uint64_t w[10];
};
static_assert(std::is_trivially_copyable_v<FlightEntry> && sizeof(FlightEntry) == sizeof(Packed),
              "FlightEntry is the ring's words exactly (write() copies them from it)");
// The words finish() rewrites: the one holding the state, and the end tick.
constexpr size_t kStateWord = offsetof(FlightEntry, state) / 8;
constexpr size_t kStateShift = offsetof(FlightEntry, state) % 8 * 8;  // little-endian: the byte's place in its word
constexpr size_t kEndedWord = offsetof(FlightEntry, endedTick) / 8;
static_assert(offsetof(FlightEntry, endedTick) % 8 == 0 && sizeof(FlightEntry::endedTick) == 8);
static_assert(std::endian::native == std::endian::little, "finish() places the state byte for little-endian words");
}  // namespace

FlightRecorder::FlightRecorder(size_t capacity)
    : capacity_(capacity), slots_(capacity ? new Slot[capacity] : nullptr) {}

void FlightRecorder::write(Slot& s, const FlightEntry& e) {
  const uint64_t v = s.version.load(std::memory_order_relaxed);
  s.version.store(v + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  // Word by word straight from the entry: a whole copy into a local first cost ten more stores a call, and the
  // loop's own counting was a third of the copy's instructions.
  const auto* bytes = reinterpret_cast<const std::byte*>(&e);
#pragma GCC unroll 10
  for (size_t i = 0; i < kWords; ++i) {
    uint64_t word;
    std::memcpy(&word, bytes + i * sizeof(word), sizeof(word));
    s.words[i].store(word, std::memory_order_relaxed);
  }
  s.version.store(v + 2, std::memory_order_release);
}

bool FlightRecorder::read(const Slot& s, FlightEntry* e) const {
  for (int attempt = 0; attempt < 100; ++attempt) {
    const uint64_t before = s.version.load(std::memory_order_acquire);
    if (before == 0) return false;  // never written
    if (before & 1) continue;
    Packed p;
    for (size_t i = 0; i < kWords; ++i) p.w[i] = s.words[i].load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (s.version.load(std::memory_order_relaxed) != before) continue;
    std::memcpy(static_cast<void*>(e), &p, sizeof(*e));
    return true;
  }
  return false;  // written to without pause: the entry is being replaced, leave it out
}

uint64_t FlightRecorder::append(const FlightEntry& e) {
  if (capacity_ == 0) return 0;
  const uint64_t n = recorded_.load(std::memory_order_relaxed);
  write(slots_[nextSlot_], e);
  nextSlot_ = nextSlot_ + 1 == capacity_ ? 0 : nextSlot_ + 1;
  recorded_.store(n + 1, std::memory_order_release);
  return n;
}

void FlightRecorder::finish(uint64_t index, OpState state, uint64_t endedTick) {
  const uint64_t recorded = recorded_.load(std::memory_order_relaxed);
  if (capacity_ == 0 || recorded - index > capacity_) return;
  // The newest entry, the usual one, sits just before the next slot: no division on a call's path.
  Slot& s = index + 1 == recorded ? slots_[(nextSlot_ == 0 ? capacity_ : nextSlot_) - 1]
                                  : slots_[static_cast<size_t>(index % capacity_)];
  // Only this thread writes the slot, so its state word reads back as written; the state is one byte of it.
  const uint64_t stateWord = (s.words[kStateWord].load(std::memory_order_relaxed) & ~(uint64_t{0xff} << kStateShift)) |
                             (uint64_t{static_cast<uint8_t>(state)} << kStateShift);
  const uint64_t v = s.version.load(std::memory_order_relaxed);
  s.version.store(v + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  s.words[kStateWord].store(stateWord, std::memory_order_relaxed);
  s.words[kEndedWord].store(endedTick, std::memory_order_relaxed);
  s.version.store(v + 2, std::memory_order_release);
}

std::vector<FlightEntry> FlightRecorder::snapshot() const {
  std::vector<FlightEntry> out;
  if (capacity_ == 0) return out;
  const uint64_t n = recorded_.load(std::memory_order_acquire);
  const uint64_t first = n > capacity_ ? n - capacity_ : 0;
  out.reserve(static_cast<size_t>(n - first));
  for (uint64_t i = first; i < n; ++i) {
    FlightEntry e;
    if (read(slots_[static_cast<size_t>(i % capacity_)], &e)) out.push_back(e);
  }
  return out;
}

}  // namespace chorus::observe

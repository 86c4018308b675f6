// A single-producer single-consumer byte FIFO over a flat memory block: the in-process, shared-memory and tcp
// staging buffers are all this. The producer publishes bytes with a release store of `tail`; the consumer polls
// it with an acquire load. That flag poll is the whole small-message protocol: no locks, no syscalls.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>

namespace chorus::transport {

struct FifoHeader {
  alignas(64) std::atomic<uint64_t> head;    // bytes consumed so far (written by the consumer)
  alignas(64) std::atomic<uint64_t> tail;    // bytes produced so far (written by the producer)
  alignas(64) std::atomic<uint32_t> closed;  // set by either side when it goes away
  uint64_t capacity;
  alignas(64) std::atomic<uint64_t> directRead;  // bytes the consumer copied straight from the producer's buffers
};

class Fifo {
 public:
  /// Memory needed for a FIFO of `capacity` bytes (a multiple of 64).
  static size_t bytesFor(size_t capacity) { return sizeof(FifoHeader) + capacity; }
  /// Heap memory for FIFOs, every page touched up front (no page faults once data flows). Release with free().
  static void* allocate(size_t bytes) {
    void* memory = aligned_alloc(4096, (bytes + 4095) & ~size_t{4095});
    if (memory) memset(memory, 0, bytes);
    return memory;
  }

  Fifo() = default;
  /// Views `memory`; `initialize` writes a fresh header (done once, by the creator).
  Fifo(void* memory, size_t capacity, bool initialize) {
    header_ = static_cast<FifoHeader*>(memory);
    data_ = static_cast<std::byte*>(memory) + sizeof(FifoHeader);
    capacity_ = capacity;
    if (initialize) {
      header_->head.store(0, std::memory_order_relaxed);
      header_->tail.store(0, std::memory_order_relaxed);
      header_->closed.store(0, std::memory_order_relaxed);
      header_->directRead.store(0, std::memory_order_relaxed);
      header_->capacity = capacity;
    }
  }

  /// Contiguous free space at the producer's position (may be empty).
  std::span<std::byte> writable() {
    uint64_t tail = header_->tail.load(std::memory_order_relaxed);
    // The cached index saves a shared cache line per call; refresh it whenever it leaves less than a unit.
    if (capacity_ - (tail - cachedHead_) < kRefreshBelow) cachedHead_ = header_->head.load(std::memory_order_acquire);
    uint64_t free = capacity_ - (tail - cachedHead_);
    uint64_t offset = tail % capacity_;
    uint64_t contiguous = capacity_ - offset;
    return {data_ + offset, static_cast<size_t>(free < contiguous ? free : contiguous)};
  }
  void produce(size_t bytes) {
    header_->tail.store(header_->tail.load(std::memory_order_relaxed) + bytes, std::memory_order_release);
  }

  /// Contiguous bytes ready at the consumer's position (may be empty).
  std::span<std::byte> readable() {
    uint64_t head = header_->head.load(std::memory_order_relaxed);
    if (cachedTail_ - head < kRefreshBelow) cachedTail_ = header_->tail.load(std::memory_order_acquire);
    uint64_t ready = cachedTail_ - head;
    uint64_t offset = head % capacity_;
    uint64_t contiguous = capacity_ - offset;
    return {data_ + offset, static_cast<size_t>(ready < contiguous ? ready : contiguous)};
  }
  void consume(size_t bytes) {
    header_->head.store(header_->head.load(std::memory_order_relaxed) + bytes, std::memory_order_release);
  }

  /// Direct transfers: the consumer reports bytes it read from the producer's memory; the producer waits on it.
  void ackDirect(size_t bytes) { header_->directRead.fetch_add(bytes, std::memory_order_release); }
  uint64_t directAcked() const { return header_->directRead.load(std::memory_order_acquire); }

  bool closed() const { return header_->closed.load(std::memory_order_relaxed) != 0; }
  void close() { header_->closed.store(1, std::memory_order_release); }
  size_t capacity() const { return capacity_; }

 private:
  static constexpr uint64_t kRefreshBelow = 64;
  FifoHeader* header_ = nullptr;
  std::byte* data_ = nullptr;
  size_t capacity_ = 0;
  uint64_t cachedHead_ = 0;  // producer's last view of head
  uint64_t cachedTail_ = 0;  // consumer's last view of tail
};

}  // namespace chorus::transport

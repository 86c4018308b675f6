// A single-producer single-consumer byte FIFO over a flat memory block: the in-process, shared-memory and tcp
// staging buffers are all this. The producer publishes bytes with a release store of `tail`; the consumer polls
// it with an acquire load: no locks, no syscalls. Small messages take the FIFO's line channel instead (below).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>

#include "kernels/copy.hpp"

namespace chorus::transport {

struct FifoHeader {
  alignas(64) std::atomic<uint64_t> head;  // bytes consumed so far (written by the consumer)
  alignas(64) std::atomic<uint64_t> tail;  // bytes produced so far (written by the producer)
  // The producer's last early wrap (Fifo::wrapEarly): the bytes from `skipFrom` to `skipTo` (the next lap's start)
  // are padding. Written before the tail that covers them, in tail's cache line, which the consumer loads anyway.
  std::atomic<uint64_t> skipFrom;
  std::atomic<uint64_t> skipTo;
  alignas(64) std::atomic<uint32_t> closed;  // set by either side when it goes away
  uint64_t capacity;
  alignas(64) std::atomic<uint64_t> directRead;  // bytes the consumer copied straight from the producer's buffers
};

// Small messages skip the byte stream: they travel in 64-byte lines that carry their own flag (the line's sequence
// number, never reused), so the consumer's one poll of the flag brings the payload in the same cache miss. The
// stream needs two: its tail index, then the data.
struct Line {
  static constexpr size_t kPayload = 56;
  std::byte payload[kPayload];
  std::atomic<uint64_t> flag;  // sequence number + 1 of the last message line written here
};
static_assert(sizeof(Line) == 64);

struct LineArea {
  static constexpr uint64_t kLines = 256;
  alignas(64) std::atomic<uint64_t> consumed;  // lines the consumer has taken (written by the consumer)
  alignas(64) Line lines[kLines];
};

/// How far into its buffer a FIFO's producer goes before it starts over at the front when the FIFO is empty
/// (Fifo::wrapEarly; the values: transports/fifo_lap.hpp).
struct FifoLap {
  uint64_t bytes;
  uint64_t bulkBytes;  // instead, once a bulk piece went since the last wrap
  size_t bulkPiece;    // pieces of this size and more are bulk
};

class Fifo {
 public:
  /// Largest message the line channel carries.
  static constexpr size_t kSmallMessage = 1024;

  /// Memory needed for a FIFO of `capacity` bytes (a multiple of 64), with its line channel.
  static size_t bytesFor(size_t capacity) { return sizeof(FifoHeader) + capacity + sizeof(LineArea); }
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
    lines_ = reinterpret_cast<LineArea*>(data_ + capacity);
    if (initialize) {
      lines_->consumed.store(0, std::memory_order_relaxed);
      for (Line& line : lines_->lines) line.flag.store(0, std::memory_order_relaxed);
      header_->head.store(0, std::memory_order_relaxed);
      header_->tail.store(0, std::memory_order_relaxed);
      header_->skipFrom.store(kNoSkip, std::memory_order_relaxed);
      header_->skipTo.store(0, std::memory_order_relaxed);
      header_->closed.store(0, std::memory_order_relaxed);
      header_->directRead.store(0, std::memory_order_relaxed);
      header_->capacity = capacity;
    }
  }

  /// Producer: a FIFO found empty a lap or more into the buffer starts over at its front instead of going on to the
  /// end, so the bytes of calls that the consumer keeps up with cycle through the buffer's first lap and stay in
  /// cache; a consumer that falls behind still finds the whole capacity filled for it. Only for a FIFO whose consumer
  /// reads with readable()/consume() (not a transport's thread that tracks offsets itself). Which laps pay:
  /// transports/fifo_lap.hpp. A lap at or above the capacity never wraps early.
  void wrapEarly(const FifoLap& lap) {
    wrapsEarly_ = true;
    lap_ = lap;
    lap_.bytes = std::max<uint64_t>(lap.bytes, kWrapCheckEvery);
    lap_.bulkBytes = std::clamp<uint64_t>(lap.bulkBytes, kWrapCheckEvery, lap_.bytes);
  }

  /// Contiguous free space at the producer's position (may be empty).
  std::span<std::byte> writable() {
    uint64_t tail = header_->tail.load(std::memory_order_relaxed);
    if (wrapsEarly_ && tail >= nextWrapCheck_ && tail % capacity_ >= (bulkThisLap_ ? lap_.bulkBytes : lap_.bytes))
      tail = wrapIfEmpty(tail);
    // The cached index saves a shared cache line per call; refresh it whenever it leaves less than a unit.
    if (capacity_ - (tail - cachedHead_) < kRefreshBelow) refreshHead();
    uint64_t free = capacity_ - (tail - cachedHead_);
    uint64_t offset = tail % capacity_;
    uint64_t contiguous = capacity_ - offset;
    return {data_ + offset, static_cast<size_t>(free < contiguous ? free : contiguous)};
  }
  void produce(size_t bytes) {
    bulkThisLap_ |= bytes >= lap_.bulkPiece;
    header_->tail.store(header_->tail.load(std::memory_order_relaxed) + bytes, std::memory_order_release);
  }

  /// Contiguous bytes ready at the consumer's position (may be empty).
  std::span<std::byte> readable() {
    uint64_t head = header_->head.load(std::memory_order_relaxed);
    if (cachedTail_ - head < kRefreshBelow) {
      cachedTail_ = header_->tail.load(std::memory_order_acquire);
      // A wrap the producer made before publishing this tail is visible now; one made later lies beyond it.
      skipFrom_ = header_->skipFrom.load(std::memory_order_relaxed);
      skipTo_ = header_->skipTo.load(std::memory_order_relaxed);
    }
    // The producer wraps only when this side has taken every byte, so a tail past the wrap finds it at skipFrom.
    if (head == skipFrom_ && cachedTail_ != head) {
      head = skipTo_;
      header_->head.store(head, std::memory_order_release);
    }
    uint64_t ready = cachedTail_ - head;
    uint64_t offset = head % capacity_;
    uint64_t contiguous = capacity_ - offset;
    return {data_ + offset, static_cast<size_t>(ready < contiguous ? ready : contiguous)};
  }
  void consume(size_t bytes) {
    header_->head.store(header_->head.load(std::memory_order_relaxed) + bytes, std::memory_order_release);
  }

  /// Line channel, producer: writes a whole message of 1..kSmallMessage bytes, or returns false when the lines
  /// are full.
  bool sendLines(const void* src, size_t bytes) { return sendLines(nullptr, 0, src, bytes); }
  /// The same for a message of two parts, `head` (at most one line's payload) then `src`.
  bool sendLines(const void* head, size_t headBytes, const void* src, size_t bytes) {
    // Several lines, or none (an empty message writes nothing, as its receiver reads nothing): the general path.
    if (headBytes + bytes - 1 >= Line::kPayload) return sendLineSpan(head, headBytes, src, bytes);
    // One line, most small calls' messages with their call header: no loop, no frame.
    if (!linesFree(1)) return false;
    Line& line = lines_->lines[linesSent_ % LineArea::kLines];
    if (headBytes > 0) kernels::copyShort(line.payload, head, headBytes);
    kernels::copyShort(line.payload + headBytes, src, bytes);
    line.flag.store(++linesSent_, std::memory_order_release);
    return true;
  }
  /// Line channel, consumer: takes the next message of `bytes` bytes once all its lines are there.
  bool recvLines(void* dst, size_t bytes) {
    const uint64_t need = linesFor(bytes);
    // The lines are written in order, each flag released after its payload: the last flag covers them all.
    const Line& last = lines_->lines[(linesReceived_ + need - 1) % LineArea::kLines];
    if (last.flag.load(std::memory_order_acquire) != linesReceived_ + need) return false;
    if (need == 1) {
      kernels::copyShort(dst, last.payload, bytes);
      lines_->consumed.store(++linesReceived_, std::memory_order_release);
      return true;
    }
    auto* to = static_cast<std::byte*>(dst);
    for (uint64_t i = 0; i < need; ++i, to += Line::kPayload) {
      const Line& line = lines_->lines[(linesReceived_ + i) % LineArea::kLines];
      if (i + 1 < need) {
        memcpy(to, line.payload, Line::kPayload);
      } else {
        kernels::copyShort(to, line.payload, bytes - i * Line::kPayload);
      }
    }
    linesReceived_ += need;
    lines_->consumed.store(linesReceived_, std::memory_order_release);
    return true;
  }
  /// Line channel, consumer: copies the first `bytes` (at most Line::kPayload) of the next message, leaving it
  /// there; false until its first line has arrived.
  bool peekLine(void* dst, size_t bytes) const {
    const Line& first = lines_->lines[linesReceived_ % LineArea::kLines];
    if (first.flag.load(std::memory_order_acquire) != linesReceived_ + 1) return false;
    kernels::copyShort(dst, first.payload, bytes < Line::kPayload ? bytes : Line::kPayload);
    return true;
  }
  /// Line channel, consumer: true when the next line has arrived.
  bool linesWaiting() const {
    const Line& next = lines_->lines[linesReceived_ % LineArea::kLines];
    return next.flag.load(std::memory_order_acquire) == linesReceived_ + 1;
  }

  /// Direct transfers: the consumer reports bytes it read from the producer's memory; the producer waits on it.
  void ackDirect(size_t bytes) { header_->directRead.fetch_add(bytes, std::memory_order_release); }
  uint64_t directAcked() const { return header_->directRead.load(std::memory_order_acquire); }

  /// For a transport that moves the bytes itself (tcp, ib): as consumer of the outgoing FIFO, frees `bytes` once
  /// they left; as producer of the incoming one, makes everything below `tail` (a running total) readable.
  void release(uint64_t bytes) {
    header_->head.store(header_->head.load(std::memory_order_relaxed) + bytes, std::memory_order_release);
  }
  void publish(uint64_t tail) { header_->tail.store(tail, std::memory_order_release); }
  std::byte* data() const { return data_; }

  bool closed() const { return header_->closed.load(std::memory_order_relaxed) != 0; }
  void close() { header_->closed.store(1, std::memory_order_release); }
  size_t capacity() const { return capacity_; }

 private:
  static constexpr uint64_t kRefreshBelow = 64;
  static constexpr uint64_t kNoSkip = ~uint64_t{0};
  // A wrap costs the consumer a jump and the producer a look at the consumer's index: once per lap at most. Looks
  // that find bytes in flight are repeated every 64 KiB produced.
  static constexpr uint64_t kWrapCheckEvery = 64 << 10;

  // Wraps to the next lap's start when every byte produced has been consumed. Publishes the new tail at once, with
  // no bytes: the consumer, once at `tail`, moves on to the lap's start. Returns the tail to write at.
  uint64_t wrapIfEmpty(uint64_t tail) {
    nextWrapCheck_ = tail + kWrapCheckEvery;
    refreshHead();
    if (cachedHead_ != tail) return tail;
    const uint64_t next = tail - tail % capacity_ + capacity_;
    header_->skipFrom.store(tail, std::memory_order_relaxed);
    header_->skipTo.store(next, std::memory_order_relaxed);
    header_->tail.store(next, std::memory_order_release);
    wrappedFrom_ = tail;
    wrappedTo_ = next;
    bulkThisLap_ = false;
    cachedHead_ = next;
    nextWrapCheck_ = next + lap_.bulkBytes;
    return next;
  }
  // A consumer at the last early wrap has taken every byte before it: the padding after it is free space too.
  void refreshHead() {
    cachedHead_ = header_->head.load(std::memory_order_acquire);
    if (cachedHead_ == wrappedFrom_) cachedHead_ = wrappedTo_;
  }
  static uint64_t linesFor(size_t bytes) { return (bytes + Line::kPayload - 1) / Line::kPayload; }
  bool linesFree(uint64_t need) {
    if (linesSent_ + need - cachedConsumed_ <= LineArea::kLines) return true;
    cachedConsumed_ = lines_->consumed.load(std::memory_order_acquire);
    return linesSent_ + need - cachedConsumed_ <= LineArea::kLines;
  }
  // sendLines() of a message over several lines.
  [[gnu::noinline]] bool sendLineSpan(const void* head, size_t headBytes, const void* src, size_t bytes) {
    const uint64_t need = linesFor(headBytes + bytes);
    if (!linesFree(need)) return false;
    const auto* from = static_cast<const std::byte*>(src);
    size_t left = bytes;
    for (uint64_t i = 0; i < need; ++i) {
      Line& line = lines_->lines[(linesSent_ + i) % LineArea::kLines];
      size_t room = Line::kPayload;
      std::byte* to = line.payload;
      if (i == 0 && headBytes > 0) {
        kernels::copyShort(to, head, headBytes);
        to += headBytes;
        room -= headBytes;
      }
      const size_t n = left < room ? left : room;
      kernels::copyShort(to, from, n);
      from += n;
      left -= n;
      line.flag.store(linesSent_ + i + 1, std::memory_order_release);
    }
    linesSent_ += need;
    return true;
  }

  FifoHeader* header_ = nullptr;
  LineArea* lines_ = nullptr;
  uint64_t linesSent_ = 0;       // producer's count of lines written
  uint64_t cachedConsumed_ = 0;  // producer's last view of lines_->consumed
  uint64_t linesReceived_ = 0;   // consumer's count of lines taken
  std::byte* data_ = nullptr;
  size_t capacity_ = 0;
  uint64_t cachedHead_ = 0;                   // producer's last view of head
  uint64_t cachedTail_ = 0;                   // consumer's last view of tail
  uint64_t skipFrom_ = kNoSkip, skipTo_ = 0;  // consumer's view of the producer's last early wrap
  bool wrapsEarly_ = false;
  FifoLap lap_{};             // producer: where it wraps early
  bool bulkThisLap_ = false;  // producer: a piece of lap_.bulkPiece or more went since the last wrap
  uint64_t wrappedFrom_ = kNoSkip, wrappedTo_ = 0;  // producer: its last early wrap
  uint64_t nextWrapCheck_ = 0;  // producer: the tail at which to look at the consumer's position again
};

}  // namespace chorus::transport

// The ib transport's protocol, apart from the verbs calls that carry it (tested on any machine):
//  - The byte stream: each side has a staging FIFO (the engine writes there) and a ring of the same capacity that the
//    peer writes into. The sender copies staged bytes to the same offset of the peer's ring with RDMA WRITE WITH
//    IMMEDIATE, never across the ring's end; the immediate carries the byte count, so the receiver's completion
//    tells what arrived. The receiver returns credits (bytes consumed) once a quarter of the ring is free, and the
//    sender frees that much staging space: staging and ring then never hold more than the capacity.
//  - Direct transfers: the receiver reads the sender's registered buffer with RDMA READ in chunks and acknowledges
//    the bytes it took, so the sender knows when its buffer may change.
//  Immediates name their kind in the top two bits; the rest is a byte count (below 1 GiB).
#pragma once

#include <algorithm>
#include <cstdint>

namespace chorus::transport::ib {

enum class ImmediateKind : uint32_t { kData = 0, kCredit = 1, kDirectAck = 2, kClose = 3 };

constexpr uint32_t kImmediateBytesMask = (1u << 30) - 1;
/// Largest ring: byte counts of a ring's size must fit an immediate.
constexpr uint64_t kMaxRingBytes = kImmediateBytesMask;

inline uint32_t immediate(ImmediateKind kind, uint32_t bytes) {
  return static_cast<uint32_t>(kind) << 30 | (bytes & kImmediateBytesMask);
}
inline ImmediateKind immediateKind(uint32_t imm) { return static_cast<ImmediateKind>(imm >> 30); }
inline uint32_t immediateBytes(uint32_t imm) { return imm & kImmediateBytesMask; }

/// The sender's side of the stream: which staged bytes to write next.
class RingWriter {
 public:
  struct Write {
    uint64_t offset = 0;  // in the staging FIFO and in the peer's ring alike
    uint64_t bytes = 0;   // 0: nothing to post now
  };

  RingWriter(uint64_t capacity, uint64_t maxWrite, uint32_t maxOutstanding)
      : capacity_(capacity), maxWrite_(maxWrite), maxOutstanding_(maxOutstanding) {}

  /// The next write for bytes committed (a running total) but not yet written: up to the ring's end, at most
  /// maxWrite bytes, and none while maxOutstanding writes are in flight.
  Write next(uint64_t committed) const {
    if (committed <= written_ || outstanding_ >= maxOutstanding_) return {};
    const uint64_t offset = written_ % capacity_;
    return {offset, std::min({committed - written_, capacity_ - offset, maxWrite_})};
  }
  void posted(const Write& w) {
    written_ += w.bytes;
    ++outstanding_;
  }
  /// A write's completion came back.
  void completed() { outstanding_ -= outstanding_ > 0 ? 1 : 0; }

  uint64_t written() const { return written_; }
  uint32_t outstanding() const { return outstanding_; }

 private:
  uint64_t capacity_, maxWrite_;
  uint32_t maxOutstanding_;
  uint64_t written_ = 0;
  uint32_t outstanding_ = 0;
};

/// The receiver's side of the stream: what arrived, and when credits go back.
class RingReader {
 public:
  explicit RingReader(uint64_t capacity) : capacity_(capacity) {}

  void arrived(uint32_t bytes) { arrived_ += bytes; }
  uint64_t arrivedTotal() const { return arrived_; }
  /// Bytes consumed so far (a running total) that the sender has not been credited with; 0 while fewer than a
  /// quarter of the ring (the sender still has room). Call credited() once they are on their way.
  uint64_t creditDue(uint64_t consumed) const {
    const uint64_t due = consumed - credited_;
    return due >= std::max<uint64_t>(capacity_ / 4, 1) ? due : 0;
  }
  void credited(uint64_t bytes) { credited_ += bytes; }

 private:
  uint64_t capacity_;
  uint64_t arrived_ = 0, credited_ = 0;
};

/// The receiver's RDMA READs of one direct transfer into a registered bounce area of `slots` chunks: which chunk
/// to read next, and which arrived chunk to copy out. Reads complete in order on a queue pair, so the chunks do.
class ReadWindow {
 public:
  struct Read {
    uint64_t offset = 0;  // in the peer's region
    uint64_t bytes = 0;   // 0: nothing to post now
    uint32_t slot = 0;    // bounce chunk it lands in
  };

  ReadWindow(uint64_t chunk, uint32_t slots) : chunk_(chunk), slots_(slots) {}

  /// Starts a transfer of [offset, offset + bytes) unless it continues the current one: the engine asks again for
  /// the rest of a transfer until all of it arrived.
  void want(uint64_t offset, uint64_t bytes) {
    if (offset == taken_ && offset + bytes == end_) return;
    taken_ = posted_ = offset;
    end_ = offset + bytes;
    arrived_ = 0;
    inFlight_ = 0;
  }
  /// The next read to post, while bounce chunks are free.
  Read next() const {
    if (posted_ >= end_ || inFlight_ >= slots_) return {};
    return {posted_, std::min(chunk_, end_ - posted_),
            static_cast<uint32_t>(((posted_ - taken_) / chunk_ + first_) % slots_)};
  }
  void posted(const Read& r) {
    posted_ += r.bytes;
    ++inFlight_;
  }
  /// The oldest outstanding read completed.
  void completed() { ++arrived_; }
  /// The oldest arrived chunk: its slot and bytes; bytes 0 when none arrived.
  Read ready() const {
    if (arrived_ == 0) return {};
    return {taken_, std::min(chunk_, end_ - taken_), first_};
  }
  /// The oldest arrived chunk was copied out; its slot is free again.
  void taken() {
    taken_ += std::min(chunk_, end_ - taken_);
    --arrived_;
    --inFlight_;
    first_ = (first_ + 1) % slots_;
  }
  bool idle() const { return inFlight_ == 0; }

 private:
  uint64_t chunk_;
  uint32_t slots_;
  uint64_t taken_ = 0, posted_ = 0, end_ = 0;
  uint32_t arrived_ = 0, inFlight_ = 0, first_ = 0;
};

}  // namespace chorus::transport::ib

/// @file counters.hpp
/// TrafficCounters: what a communicator has moved, per collective, since it was created or last reset.
#pragma once

#include <cstdint>

namespace chorus {

/// The counts of one kind of call on this rank.
struct CallCounters {
  uint64_t calls = 0;  ///< calls made
  /// The logical size nccl-tests uses for algorithm bandwidth: the whole buffer for AllReduce, Broadcast and
  /// Reduce; the whole gathered output (sendCount x ranks) for AllGather and Gather; the whole input (recvCount x
  /// ranks) for ReduceScatter and Scatter; this rank's send buffer for AlltoAll(v) and Send; the receive buffer for
  /// Recv.
  uint64_t payloadBytes = 0;
  /// Bytes this rank sent to other ranks (copies to itself left out), as the chosen algorithm's plan moves them.
  uint64_t wireBytes = 0;

  /// Adds another set of counts to this one.
  CallCounters& operator+=(const CallCounters& o) {
    calls += o.calls;
    payloadBytes += o.payloadBytes;
    wireBytes += o.wireBytes;
    return *this;
  }
};

/// The counts of each kind of call (Communicator::counters()).
struct TrafficCounters {
  /// One set of counts per kind of call.
  ///@{
  CallCounters allReduce, reduceScatter, allGather, alltoAll, alltoAllv, broadcast, reduce, gather, scatter, send, recv;
  ///@}

  /// Every kind of call added up.
  CallCounters total() const {
    CallCounters t;
    for (const CallCounters* c : {&allReduce, &reduceScatter, &allGather, &alltoAll, &alltoAllv, &broadcast, &reduce,
                                  &gather, &scatter, &send, &recv})
      t += *c;
    return t;
  }
};

}  // namespace chorus

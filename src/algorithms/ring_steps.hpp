// Building blocks that several algorithms compose: a ring reduce-scatter and a ring all-gather among any group of
// ranks over any slicing of the buffers, and a fence that turns "step X finished" into a dependency any later step
// can take whatever bytes it covers.
#pragma once

#include <functional>
#include <vector>

#include "algorithms/plan.hpp"

namespace chorus::algo {

/// Byte offset and length of the j-th slice of a group's data.
struct ByteRange {
  size_t offset = 0;
  size_t bytes = 0;
};
using SliceOf = std::function<ByteRange(int slice)>;

/// The block of `rank` when every rank owns `block` bytes in rank order (AllGather, ReduceScatter layouts).
inline ByteRange rankBlock(int rank, size_t block) { return {static_cast<size_t>(rank) * block, block}; }

/// A step that finishes once step `dep` has finished entirely (-1: nothing to wait for, returns -1). Steps that
/// depend on a fence may cover any bytes: a dependency on a transfer only releases the bytes at the same offsets.
int addFence(Plan& p, int dep);

/// Ring reduce-scatter among `group` (ranks; this rank is group[me]): afterwards this rank holds slice `me`,
/// reduced over the group, in `dst`. Each member's contribution to slice j is at slice(j) of `src`. Every step
/// that reads `src` first waits for `ready` (a fence or -1). Returns the step that finishes slice `me`.
int addRingReduceScatter(Plan& p, const std::vector<int>& group, int me, const SliceOf& slice, BufferKind src,
                         BufferKind dst, int ready);

/// Ring all-gather among `group`: member j's slice j is in `buf` once step `ownReady` has finished (on this rank);
/// afterwards every slice is in `buf` on every member. Returns, per slice, the step after which it is there.
std::vector<int> addRingAllGather(Plan& p, const std::vector<int>& group, int me, const SliceOf& slice, BufferKind buf,
                                  int ownReady);

}  // namespace chorus::algo

#include "gpu/peer_steps.hpp"

#include <algorithm>

#include "gpu/one_kernel_step.hpp"

namespace chorus::gpu {
namespace {

using algo::CollType;

Ref sendAt(size_t offset) { return {Place::kSend, 0, offset}; }
Ref recvAt(size_t offset) { return {Place::kRecv, 0, offset}; }
Ref slotOf(int rank, size_t offset) { return {Place::kSlot, rank, offset}; }

// Whether the call's send buffer at `sendOffset` is its receive buffer at `recvOffset` (an in-place call).
bool sameBytes(const Operation& op, size_t sendOffset, size_t recvOffset) {
  return op.send && op.recv &&
         static_cast<const char*>(op.send) + sendOffset == static_cast<const char*>(op.recv) + recvOffset;
}

// Elements of each of `rows` rows that fit a slot, each row a multiple of 16 bytes (aligned vector copies).
size_t rowElements(size_t slotBytes, size_t rows, size_t elementBytes) {
  size_t perRow = slotBytes / rows;
  perRow -= perRow % 16;
  return std::max<size_t>(1, perRow / elementBytes);
}

// The start of rank q's share of `count` elements split over n ranks, on 16-byte boundaries where it can.
size_t shareStart(int q, int n, size_t count, size_t elementBytes) {
  if (q >= n) return count;
  const size_t unit = std::max<size_t>(1, 16 / elementBytes);
  const size_t at = count * static_cast<size_t>(q) / static_cast<size_t>(n);
  return std::min(count, at - at % unit);
}

// One step per `perStep` elements of `count`; `body(step, first, elements)` fills each.
template <typename Body>
std::vector<Step> chunked(size_t count, size_t perStep, size_t phases, Body body) {
  std::vector<Step> steps;
  for (size_t first = 0; first < count; first += perStep) {
    Step& s = steps.emplace_back();
    s.phases.resize(phases);
    body(s, first, std::min(perStep, count - first));
  }
  return steps;
}

bool reduces(CollType t) {
  return t == CollType::kAllReduce || t == CollType::kReduceScatter || t == CollType::kReduce;
}

}  // namespace

bool runsOnPeerMemory(CollType type) {
  switch (type) {
    case CollType::kAllReduce:
    case CollType::kReduceScatter:
    case CollType::kAllGather:
    case CollType::kAlltoAll:
    case CollType::kBroadcast:
    case CollType::kReduce:
    case CollType::kGather:
    case CollType::kScatter:
      return true;
    default:
      return false;
  }
}

size_t barrierCount(const std::vector<Step>& steps) {
  size_t n = 0;
  for (const Step& s : steps) n += s.phases.empty() ? 0 : s.phases.size() - 1;
  return n;
}

size_t movedBytes(const Step& step, int nranks, size_t elementBytes) {
  size_t bytes = 0;
  for (const Phase& p : step.phases) {
    for (const Move& m : p.moves) bytes += m.bytes;
    for (const Combine& c : p.combines) bytes += c.count * elementBytes * static_cast<size_t>(nranks);
  }
  return bytes;
}

bool runsAsOneKernel(const std::vector<Step>& steps, int nranks, size_t elementBytes, const PeerStepLimits& limits) {
  if (steps.size() != 1 || nranks > kOneKernelRanks) return false;
  const std::vector<Phase>& phases = steps[0].phases;
  if (phases.empty() || phases.size() > 2 || !phases[0].combines.empty()) return false;
  for (const Phase& p : phases)
    if (p.moves.size() > static_cast<size_t>(kOneKernelMoves)) return false;
  if (phases.size() == 2) {
    // A reduction runs beside its phase's moves in the kernel (not after them, as its own kernel would), so it
    // takes a phase of its own.
    const std::vector<Combine>& combines = phases[1].combines;
    if (combines.size() > 1 || (combines.size() == 1 && (combines[0].to.size() > 2 || !phases[1].moves.empty())))
      return false;
  }
  return movedBytes(steps[0], nranks, elementBytes) <= limits.oneKernelBytes;
}

std::vector<Step> planPeerSteps(const Operation& op, int rank, int nranks, const PeerStepLimits& limits) {
  const size_t e = dataTypeSize(op.dtype);
  const size_t c = op.count;
  const int r = rank;
  const int n = nranks;
  const bool scaled = reduces(op.type) && op.op.kind == RedOpKind::kPreMulSum;
  const size_t slot = limits.slotBytes;

  if (n == 1) {  // every collective is a copy (scaled for PreMulSum) from the send to the receive buffer
    Step s;
    s.phases.resize(1);
    if (scaled || !sameBytes(op, 0, 0)) s.phases[0].moves.push_back({sendAt(0), recvAt(0), c * e, scaled});
    return {s};
  }

  switch (op.type) {
    case CollType::kAllReduce: {
      const bool oneShot = c * e <= limits.oneShotBytes;
      return chunked(c, rowElements(slot, 1, e), oneShot ? 2 : 3, [&](Step& s, size_t first, size_t k) {
        s.phases[0].moves.push_back({sendAt(first * e), slotOf(r, 0), k * e, scaled});
        if (oneShot) {
          s.phases[1].combines.push_back({0, k, {recvAt(first * e)}});
          return;
        }
        // Two-shot: each rank reduces its share into its slot and its result, then copies the others' shares.
        const size_t lo = shareStart(r, n, k, e), hi = shareStart(r + 1, n, k, e);
        if (hi > lo) s.phases[1].combines.push_back({lo * e, hi - lo, {recvAt((first + lo) * e), slotOf(r, lo * e)}});
        for (int q = 0; q < n; ++q) {
          const size_t qlo = shareStart(q, n, k, e), qhi = shareStart(q + 1, n, k, e);
          if (q != r && qhi > qlo)
            s.phases[2].moves.push_back({slotOf(q, qlo * e), recvAt((first + qlo) * e), (qhi - qlo) * e});
        }
      });
    }
    case CollType::kReduceScatter: {
      const size_t m = rowElements(slot, n, e);
      return chunked(c, m, 2, [&](Step& s, size_t first, size_t k) {
        for (int q = 0; q < n; ++q)
          s.phases[0].moves.push_back({sendAt((q * c + first) * e), slotOf(r, q * m * e), k * e, scaled});
        s.phases[1].combines.push_back({r * m * e, k, {recvAt(first * e)}});
      });
    }
    case CollType::kAllGather: {
      const bool inPlace = sameBytes(op, 0, r * c * e);
      return chunked(c, rowElements(slot, 1, e), 2, [&](Step& s, size_t first, size_t k) {
        s.phases[0].moves.push_back({sendAt(first * e), slotOf(r, 0), k * e});
        if (!inPlace) s.phases[0].moves.push_back({sendAt(first * e), recvAt((r * c + first) * e), k * e});
        for (int q = 0; q < n; ++q)
          if (q != r) s.phases[1].moves.push_back({slotOf(q, 0), recvAt((q * c + first) * e), k * e});
      });
    }
    case CollType::kAlltoAll: {
      const size_t m = rowElements(slot, n, e);
      return chunked(c, m, 2, [&](Step& s, size_t first, size_t k) {
        for (int q = 0; q < n; ++q) {
          const Ref to = q == r ? recvAt((r * c + first) * e) : slotOf(r, q * m * e);
          s.phases[0].moves.push_back({sendAt((q * c + first) * e), to, k * e});
          if (q != r) s.phases[1].moves.push_back({slotOf(q, r * m * e), recvAt((q * c + first) * e), k * e});
        }
      });
    }
    case CollType::kBroadcast: {
      const bool inPlace = sameBytes(op, 0, 0);
      return chunked(c, rowElements(slot, 1, e), 2, [&](Step& s, size_t first, size_t k) {
        if (r == op.root) {
          s.phases[0].moves.push_back({sendAt(first * e), slotOf(r, 0), k * e});
          if (!inPlace) s.phases[0].moves.push_back({sendAt(first * e), recvAt(first * e), k * e});
        } else {
          s.phases[1].moves.push_back({slotOf(op.root, 0), recvAt(first * e), k * e});
        }
      });
    }
    case CollType::kReduce:
      return chunked(c, rowElements(slot, 1, e), 2, [&](Step& s, size_t first, size_t k) {
        s.phases[0].moves.push_back({sendAt(first * e), slotOf(r, 0), k * e, scaled});
        if (r == op.root) s.phases[1].combines.push_back({0, k, {recvAt(first * e)}});
      });
    case CollType::kGather: {
      const bool inPlace = sameBytes(op, 0, r * c * e);
      return chunked(c, rowElements(slot, 1, e), 2, [&](Step& s, size_t first, size_t k) {
        if (r != op.root) {
          s.phases[0].moves.push_back({sendAt(first * e), slotOf(r, 0), k * e});
          return;
        }
        if (!inPlace) s.phases[0].moves.push_back({sendAt(first * e), recvAt((r * c + first) * e), k * e});
        for (int q = 0; q < n; ++q)
          if (q != r) s.phases[1].moves.push_back({slotOf(q, 0), recvAt((q * c + first) * e), k * e});
      });
    }
    case CollType::kScatter: {
      const size_t m = rowElements(slot, n, e);
      const bool inPlace = sameBytes(op, r * c * e, 0);
      return chunked(c, m, 2, [&](Step& s, size_t first, size_t k) {
        if (r != op.root) {
          s.phases[1].moves.push_back({slotOf(op.root, r * m * e), recvAt(first * e), k * e});
          return;
        }
        for (int q = 0; q < n; ++q) {
          if (q != r) s.phases[0].moves.push_back({sendAt((q * c + first) * e), slotOf(r, q * m * e), k * e});
        }
        if (!inPlace) s.phases[0].moves.push_back({sendAt((r * c + first) * e), recvAt(first * e), k * e});
      });
    }
    default:
      return {};
  }
}

}  // namespace chorus::gpu

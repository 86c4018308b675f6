// The nine collective descriptors. Byte counts and busbw factors follow nccl-tests (see perf/README.md).
#include "perf/collective.hpp"
#include "perf/data.hpp"

namespace chorus::perf {
namespace {

// Per-rank chunk of a rooted or all-to-all collective: floor(count/n), rounded down to 16 bytes.
size_t chunk(size_t bytes, int n, size_t e) {
  size_t c = bytes / e / static_cast<size_t>(n);
  size_t align = 16 / e;
  return c / align * align;
}

double factorAll(int n) { return n > 1 ? 2.0 * (n - 1) / n : 0.0; }
double factorPart(int n) { return n > 1 ? 1.0 * (n - 1) / n : 0.0; }
double factorOne(int) { return 1.0; }

void fillInputs(const FillArgs& a, int rank, size_t n, size_t firstIndex, void* out) {
  ValueKind kind = valueKindFor(a.op);
  for (size_t i = 0; i < n; ++i)
    storeValue(out, i, a.type, inputValue(a.seed, rank, firstIndex + i, kind, a.type, a.nranks));
}

// --- all_reduce
Counts allReduceCounts(size_t bytes, int, size_t e) {
  size_t c = bytes / e;
  return {c, c, c};
}
bool allReduceFill(const FillArgs& a) {
  fillInputs(a, a.rank, a.count, 0, a.send);
  for (size_t i = 0; i < a.count; ++i) storeReduced(a.expected, i, a.seed, i, a.op, a.type, a.nranks);
  return true;
}
ncclResult_t allReduceLaunch(const void* s, void* r, size_t c, ncclDataType_t t, ncclRedOp_t op, int, ncclComm_t comm,
                             int, int) {
  return ncclAllReduce(s, r, c, t, op, comm, nullptr);
}

// --- reduce_scatter
Counts reduceScatterCounts(size_t bytes, int n, size_t e) {
  size_t c = chunk(bytes, n, e);
  return {c * n, c, c};
}
bool reduceScatterFill(const FillArgs& a) {
  fillInputs(a, a.rank, a.count * a.nranks, 0, a.send);
  size_t base = a.count * static_cast<size_t>(a.rank);
  for (size_t i = 0; i < a.count; ++i) storeReduced(a.expected, i, a.seed, base + i, a.op, a.type, a.nranks);
  return true;
}
ncclResult_t reduceScatterLaunch(const void* s, void* r, size_t c, ncclDataType_t t, ncclRedOp_t op, int,
                                 ncclComm_t comm, int, int) {
  return ncclReduceScatter(s, r, c, t, op, comm, nullptr);
}

// --- all_gather
Counts allGatherCounts(size_t bytes, int n, size_t e) {
  size_t c = chunk(bytes, n, e);
  return {c, c * n, c};
}
bool allGatherFill(const FillArgs& a) {
  fillInputs(a, a.rank, a.count, 0, a.send);
  for (int k = 0; k < a.nranks; ++k) {
    for (size_t i = 0; i < a.count; ++i) {
      storeValue(a.expected, k * a.count + i, a.type, inputValue(a.seed, k, i, ValueKind::kMove, a.type, a.nranks));
    }
  }
  return true;
}
ncclResult_t allGatherLaunch(const void* s, void* r, size_t c, ncclDataType_t t, ncclRedOp_t, int, ncclComm_t comm, int,
                             int) {
  return ncclAllGather(s, r, c, t, comm, nullptr);
}

// --- alltoall
Counts alltoAllCounts(size_t bytes, int n, size_t e) {
  size_t c = chunk(bytes, n, e);
  return {c * n, c * n, c};
}
bool alltoAllFill(const FillArgs& a) {
  fillInputs(a, a.rank, a.count * a.nranks, 0, a.send);
  for (int k = 0; k < a.nranks; ++k) {
    size_t from = a.count * static_cast<size_t>(a.rank);
    for (size_t i = 0; i < a.count; ++i) {
      storeValue(a.expected, k * a.count + i, a.type,
                 inputValue(a.seed, k, from + i, ValueKind::kMove, a.type, a.nranks));
    }
  }
  return true;
}
ncclResult_t alltoAllLaunch(const void* s, void* r, size_t c, ncclDataType_t t, ncclRedOp_t, int, ncclComm_t comm, int,
                            int) {
  return ncclAlltoAll(s, r, c, t, comm, nullptr);
}

// --- broadcast
Counts broadcastCounts(size_t bytes, int, size_t e) {
  size_t c = bytes / e;
  return {c, c, c};
}
bool broadcastFill(const FillArgs& a) {
  if (a.rank == a.root) fillInputs(a, a.rank, a.count, 0, a.send);
  for (size_t i = 0; i < a.count; ++i) {
    storeValue(a.expected, i, a.type, inputValue(a.seed, a.root, i, ValueKind::kMove, a.type, a.nranks));
  }
  return true;
}
ncclResult_t broadcastLaunch(const void* s, void* r, size_t c, ncclDataType_t t, ncclRedOp_t, int root, ncclComm_t comm,
                             int, int) {
  return ncclBroadcast(s, r, c, t, root, comm, nullptr);
}

// --- reduce
bool reduceFill(const FillArgs& a) {
  fillInputs(a, a.rank, a.count, 0, a.send);
  if (a.rank != a.root) return false;
  for (size_t i = 0; i < a.count; ++i) storeReduced(a.expected, i, a.seed, i, a.op, a.type, a.nranks);
  return true;
}
ncclResult_t reduceLaunch(const void* s, void* r, size_t c, ncclDataType_t t, ncclRedOp_t op, int root, ncclComm_t comm,
                          int, int) {
  return ncclReduce(s, r, c, t, op, root, comm, nullptr);
}

// --- gather
Counts gatherCounts(size_t bytes, int n, size_t e) {
  size_t c = chunk(bytes, n, e);
  return {c, c * n, c};
}
bool gatherFill(const FillArgs& a) {
  fillInputs(a, a.rank, a.count, 0, a.send);
  if (a.rank != a.root) return false;
  for (int k = 0; k < a.nranks; ++k) {
    for (size_t i = 0; i < a.count; ++i) {
      storeValue(a.expected, k * a.count + i, a.type, inputValue(a.seed, k, i, ValueKind::kMove, a.type, a.nranks));
    }
  }
  return true;
}
ncclResult_t gatherLaunch(const void* s, void* r, size_t c, ncclDataType_t t, ncclRedOp_t, int root, ncclComm_t comm,
                          int, int) {
  return ncclGather(s, r, c, t, root, comm, nullptr);
}

// --- scatter
Counts scatterCounts(size_t bytes, int n, size_t e) {
  size_t c = chunk(bytes, n, e);
  return {c * n, c, c};
}
bool scatterFill(const FillArgs& a) {
  if (a.rank == a.root) fillInputs(a, a.rank, a.count * a.nranks, 0, a.send);
  size_t from = a.count * static_cast<size_t>(a.rank);
  for (size_t i = 0; i < a.count; ++i) {
    storeValue(a.expected, i, a.type, inputValue(a.seed, a.root, from + i, ValueKind::kMove, a.type, a.nranks));
  }
  return true;
}
ncclResult_t scatterLaunch(const void* s, void* r, size_t c, ncclDataType_t t, ncclRedOp_t, int root, ncclComm_t comm,
                           int, int) {
  return ncclScatter(s, r, c, t, root, comm, nullptr);
}

// --- sendrecv: a ring, send to rank+1 and receive from rank-1 in one group
bool sendRecvFill(const FillArgs& a) {
  fillInputs(a, a.rank, a.count, 0, a.send);
  int from = (a.rank - 1 + a.nranks) % a.nranks;
  for (size_t i = 0; i < a.count; ++i) {
    storeValue(a.expected, i, a.type, inputValue(a.seed, from, i, ValueKind::kMove, a.type, a.nranks));
  }
  return true;
}
ncclResult_t sendRecvLaunch(const void* s, void* r, size_t c, ncclDataType_t t, ncclRedOp_t, int, ncclComm_t comm,
                            int rank, int n) {
  ncclResult_t res = ncclGroupStart();
  if (res == ncclSuccess) res = ncclSend(s, c, t, (rank + 1) % n, comm, nullptr);
  if (res == ncclSuccess) res = ncclRecv(r, c, t, (rank - 1 + n) % n, comm, nullptr);
  ncclResult_t end = ncclGroupEnd();
  return res != ncclSuccess ? res : end;
}

}  // namespace

const Collective kAllReduce{"all_reduce",    true,      false,         true,           InPlace::kSame,
                            allReduceCounts, factorAll, allReduceFill, allReduceLaunch};
const Collective kReduceScatter{
    "reduce_scatter",   true, false, true, InPlace::kRecvInsideSend, reduceScatterCounts, factorPart, reduceScatterFill,
    reduceScatterLaunch};
const Collective kAllGather{"all_gather",    false,      false,         true,           InPlace::kSendInsideRecv,
                            allGatherCounts, factorPart, allGatherFill, allGatherLaunch};
const Collective kAlltoAll{"alltoall",     false,      false,        false,         InPlace::kSame,
                           alltoAllCounts, factorPart, alltoAllFill, alltoAllLaunch};
const Collective kBroadcast{"broadcast",     false,     true,          true,           InPlace::kSame,
                            broadcastCounts, factorOne, broadcastFill, broadcastLaunch};
const Collective kReduce{"reduce",        true,      true,       true,        InPlace::kSame,
                         broadcastCounts, factorOne, reduceFill, reduceLaunch};
const Collective kGather{"gather",     false,      true,       true,        InPlace::kSendInsideRecv,
                         gatherCounts, factorPart, gatherFill, gatherLaunch};
const Collective kScatter{"scatter",     false,      true,        true,         InPlace::kRecvInsideSend,
                          scatterCounts, factorPart, scatterFill, scatterLaunch};
const Collective kSendRecv{"sendrecv",      false,     false,        false,         InPlace::kSame,
                           broadcastCounts, factorOne, sendRecvFill, sendRecvLaunch};

}  // namespace chorus::perf

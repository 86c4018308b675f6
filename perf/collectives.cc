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

// --- reduce
bool reduceFill(const FillArgs& a) {
  fillInputs(a, a.rank, a.count, 0, a.send);
  if (a.rank != a.root) return false;
  for (size_t i = 0; i < a.count; ++i) storeReduced(a.expected, i, a.seed, i, a.op, a.type, a.nranks);
  return true;
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

// --- sendrecv: a ring, send to rank+1 and receive from rank-1 in one group
bool sendRecvFill(const FillArgs& a) {
  fillInputs(a, a.rank, a.count, 0, a.send);
  int from = (a.rank - 1 + a.nranks) % a.nranks;
  for (size_t i = 0; i < a.count; ++i) {
    storeValue(a.expected, i, a.type, inputValue(a.seed, from, i, ValueKind::kMove, a.type, a.nranks));
  }
  return true;
}

}  // namespace

const Collective kAllReduce{CollId::kAllReduce, "all_reduce",    true,      false,        true,
                            InPlace::kSame,     allReduceCounts, factorAll, allReduceFill};
const Collective kReduceScatter{CollId::kReduceScatter,
                                "reduce_scatter",
                                true,
                                false,
                                true,
                                InPlace::kRecvInsideSend,
                                reduceScatterCounts,
                                factorPart,
                                reduceScatterFill};
const Collective kAllGather{CollId::kAllGather,       "all_gather",    false,      false,        true,
                            InPlace::kSendInsideRecv, allGatherCounts, factorPart, allGatherFill};
const Collective kAlltoAll{CollId::kAlltoAll, "alltoall",     false,      false,       false,
                           InPlace::kSame,    alltoAllCounts, factorPart, alltoAllFill};
const Collective kBroadcast{CollId::kBroadcast, "broadcast",     false,     true,         true,
                            InPlace::kSame,     broadcastCounts, factorOne, broadcastFill};
const Collective kReduce{CollId::kReduce, "reduce",        true,      true,      true,
                         InPlace::kSame,  broadcastCounts, factorOne, reduceFill};
const Collective kGather{CollId::kGather,          "gather",     false,      true,      true,
                         InPlace::kSendInsideRecv, gatherCounts, factorPart, gatherFill};
const Collective kScatter{CollId::kScatter,         "scatter",     false,      true,       true,
                          InPlace::kRecvInsideSend, scatterCounts, factorPart, scatterFill};
const Collective kSendRecv{CollId::kSendRecv, "sendrecv",      false,     false,       false,
                           InPlace::kSame,    broadcastCounts, factorOne, sendRecvFill};

const char* const kTypeNames[kNumTypes] = {"int8", "uint8", "int32",  "uint32",   "int64",  "uint64",
                                           "half", "float", "double", "bfloat16", "f8e4m3", "f8e5m2"};
const ncclDataType_t kTypes[kNumTypes] = {ncclInt8,    ncclUint8,    ncclInt32,      ncclUint32,
                                          ncclInt64,   ncclUint64,   ncclFloat16,    ncclFloat32,
                                          ncclFloat64, ncclBfloat16, ncclFloat8e4m3, ncclFloat8e5m2};
const char* const kOpNames[kNumOps] = {"sum", "prod", "max", "min", "avg", "mulsum"};
const int kOps[kNumOps] = {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg, kMulSum};

const Collective* findCollective(const std::string& name) {
  for (const Collective* c : {&kAllReduce, &kReduceScatter, &kAllGather, &kAlltoAll, &kBroadcast, &kReduce, &kGather,
                              &kScatter, &kSendRecv}) {
    if (name == c->name) return c;
  }
  return nullptr;
}

const char* opName(int op) {
  for (int i = 0; i < kNumOps; ++i)
    if (kOps[i] == op) return kOpNames[i];
  return "none";
}

}  // namespace chorus::perf

// One descriptor per perf tool: how a requested size turns into counts, the bus-bandwidth factor, how data is
// laid out and checked, and the call that runs it. The driver (driver.cc) is the same for all of them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "nccl.h"

namespace chorus::perf {

struct Counts {
  size_t sendCount = 0;   // elements in the send buffer
  size_t recvCount = 0;   // elements in the recv buffer
  size_t paramCount = 0;  // the count passed to the call (the `count` column)
};

/// Where the send buffer sits in an in-place call (nccl-tests' layouts).
enum class InPlace {
  kSame,            // send == recv
  kSendInsideRecv,  // send = recv + rank * count (AllGather, Gather)
  kRecvInsideSend,  // recv = send + rank * count (ReduceScatter, Scatter)
};

/// Everything a descriptor needs to fill inputs and expected results for one rank.
struct FillArgs {
  int rank, nranks, root, op;  // op: ncclRedOp_t value, kMulSum, or -1
  size_t count;                // paramCount
  ncclDataType_t type;
  uint64_t seed;
  void* send;      // sendCount elements to fill
  void* expected;  // recvCount elements to write
};

enum class CollId {
  kAllReduce,
  kReduceScatter,
  kAllGather,
  kAlltoAll,
  kBroadcast,
  kReduce,
  kGather,
  kScatter,
  kSendRecv
};

struct Collective {
  CollId id;
  const char* name;  // "all_reduce"
  bool usesOp;
  bool usesRoot;
  bool checksInPlace;  // alltoall and sendrecv in place are timed but not checked, as in nccl-tests
  InPlace inPlace;
  Counts (*counts)(size_t bytes, int nranks, size_t elemSize);
  double (*busFactor)(int nranks);
  /// Fills this rank's input; writes the expected recv contents, or returns false when the recv buffer must be
  /// left as it was (non-root ranks of Reduce and Gather).
  bool (*fill)(const FillArgs& args);
};

extern const Collective kAllReduce, kAllGather, kReduceScatter, kAlltoAll, kBroadcast, kReduce, kSendRecv, kGather,
    kScatter;

/// The types and ops of -d / -o, in nccl-tests' order and spelling.
inline constexpr int kNumTypes = 12, kFloatIndex = 7, kNumOps = 6;
extern const char* const kTypeNames[kNumTypes];
extern const ncclDataType_t kTypes[kNumTypes];
extern const char* const kOpNames[kNumOps];
extern const int kOps[kNumOps];
/// "sum", ..., "mulsum", or "none" for -1.
const char* opName(int op);

/// The descriptor named "all_reduce", "all_gather", ...; null for an unknown name.
const Collective* findCollective(const std::string& name);

/// Runs a chorus perf tool for `coll` with nccl-tests' command line.
int runPerfTool(int argc, char** argv, const Collective& coll);

}  // namespace chorus::perf

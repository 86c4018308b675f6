// The soak's calls: a seeded random list of NCCL calls that every rank derives alike from the seed, the inputs each
// rank contributes to them, and the results they must give.
//
// Exactness: every input is a small integer (or, for avg, a base that the ranks' offsets cancel around), chosen so
// that every partial sum or product in any order is an integer the type holds exactly. Every result is then checked
// bit for bit, for every type including half, bfloat16 and the 8-bit floats.
#pragma once

#include <nccl.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace soak {

enum class Kind { kAllReduce, kBroadcast, kReduce, kAllGather, kReduceScatter, kAlltoAll, kGather, kScatter, kSend };

/// One collective, or one Send/Recv pair (kSend: `root` sends `count` elements to `peer`; they may be the same rank).
struct Item {
  Kind kind = Kind::kAllReduce;
  ncclDataType_t type = ncclFloat32;
  int op = ncclSum;  // ncclSum..ncclAvg, or ncclNumOps for a PreMulSum by `scalar`
  int scalar = 1;
  int root = 0;
  int peer = 0;
  size_t count = 0;  // as the NCCL call takes it: per rank for AllGather, ReduceScatter, AlltoAll, Gather, Scatter
  bool inPlace = false;
  bool memAlloc = false;  // buffers from ncclMemAlloc instead of malloc
};

/// What the ranks do at one step of the soak: one ungrouped item, or a group of several.
struct Call {
  bool grouped = false;
  std::vector<Item> items;
};

struct Shape {
  int nranks = 4;
  size_t maxBytes = 1 << 20;  // the largest buffer one item uses on a rank
};

/// The soak's first `count` calls for `seed`, the same on every rank.
std::vector<Call> makeCalls(uint64_t seed, size_t count, const Shape& shape);

std::string describe(const Call& call);
std::string describe(const Item& item);

size_t typeSize(ncclDataType_t type);
/// The element of `type` at `p` as a double (exact for every value the soak uses).
double decode(ncclDataType_t type, const void* p);
/// Writes `v`, an integer `type` holds exactly, at `p`.
void encode(ncclDataType_t type, double v, void* p);

/// The input rank `rank` gives element `i` of item `index` of call `call`.
double inputValue(uint64_t seed, size_t call, size_t index, const Item& item, int nranks, int rank, size_t i);
/// What the reduction of every rank's inputs of element `i` gives.
double reducedValue(uint64_t seed, size_t call, size_t index, const Item& item, int nranks, size_t i);

}  // namespace soak

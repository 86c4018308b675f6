// Test data for the perf tools: per-rank inputs chosen so that every reduction order gives the same bits (small
// integers, powers of two for products), and the expected results computed independently of chorus.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nccl.h"

namespace chorus::perf {

/// What a value will go through; decides its range.
enum class ValueKind { kSum, kProd, kMinMax, kMove };

ValueKind valueKindFor(int op);       // op: an ncclRedOp_t value, or -1 for data movement, or kMulSum
inline constexpr int kMulSum = 1000;  // marker for -o mulsum (PreMulSum with scalar 1 on even, 2 on odd ranks)

/// The input of `rank` at element `index` as an exact small number.
double inputValue(uint64_t seed, int rank, size_t index, ValueKind kind, ncclDataType_t type, int nranks);
/// PreMulSum scalar of a rank in the mulsum test.
inline double mulSumScalar(int rank) { return rank % 2 == 0 ? 1.0 : 2.0; }

/// Reduction of all ranks' inputs at `index` for op (sum, prod, max, min, avg or kMulSum), stored as `type`.
void storeReduced(void* buffer, size_t position, uint64_t seed, size_t index, int op, ncclDataType_t type, int nranks);

void storeValue(void* buffer, size_t position, ncclDataType_t type, double value);
/// Fills `bytes` at `buffer` with data that no check reads: the value 1 of `type` in every element, so that untimed
/// and unchecked buffers (-c 0, the warm-up, the --cold_buffers pool) hold values as a program's do, not zeros, and
/// every reduction of them stays small (a product of ones, a sum of a few). On the 2-core AMD EPYC VM, streaming
/// stores of 8 MiB of zeros (or of lines with one non-zero byte in 64) ran at 45 GB/s and of small floats at 26
/// GB/s, so zero-filled buffers made every streaming copy look up to 1.8x as fast.
void fillBackground(void* buffer, size_t bytes, ncclDataType_t type);
size_t typeSize(ncclDataType_t type);
/// Number of elements whose bit patterns differ; `firstBad` (optional) receives the first such index.
size_t countMismatches(const void* actual, const void* expected, size_t count, ncclDataType_t type,
                       size_t* firstBad = nullptr);

}  // namespace chorus::perf

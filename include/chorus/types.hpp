/// @file types.hpp
/// Element types and reduction operations. Values equal NCCL's ncclDataType_t / ncclRedOp_t.
#pragma once

#include <cstddef>
#include <cstdint>

namespace chorus {

enum class DataType : int {
  kInt8 = 0,
  kUint8 = 1,
  kInt32 = 2,
  kUint32 = 3,
  kInt64 = 4,
  kUint64 = 5,
  kFloat16 = 6,
  kFloat32 = 7,
  kFloat64 = 8,
  kBfloat16 = 9,
};
inline constexpr int kNumDataTypes = 10;

enum class RedOpKind : int { kSum = 0, kProd = 1, kMax = 2, kMin = 3, kAvg = 4, kPreMulSum = 5 };

/// A reduction: a kind, plus for kPreMulSum the scalar (stored as double, converted to the element type).
struct RedOp {
  RedOpKind kind = RedOpKind::kSum;
  double scalar = 1.0;

  static RedOp sum() { return {RedOpKind::kSum, 1.0}; }
  static RedOp prod() { return {RedOpKind::kProd, 1.0}; }
  static RedOp max() { return {RedOpKind::kMax, 1.0}; }
  static RedOp min() { return {RedOpKind::kMin, 1.0}; }
  static RedOp avg() { return {RedOpKind::kAvg, 1.0}; }
  static RedOp preMulSum(double s) { return {RedOpKind::kPreMulSum, s}; }
};

/// Size in bytes of one element; 0 for an invalid type.
size_t dataTypeSize(DataType type);
/// Short name as nccl-tests prints it ("float", "half", "bfloat16", ...); "?" for an invalid type.
const char* dataTypeName(DataType type);
/// True for a value inside the enum.
bool isValidDataType(DataType type);
const char* redOpName(RedOpKind kind);

}  // namespace chorus

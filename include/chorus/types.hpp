/// @file types.hpp
/// Element types and reduction operations. Values equal NCCL's ncclDataType_t / ncclRedOp_t.
#pragma once

#include <cstddef>
#include <cstdint>

namespace chorus {

/// The element type of a call's buffers.
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
  kFloat8e4m3 = 10,  ///< CUDA's __nv_fp8_e4m3: 4 exponent and 3 mantissa bits, largest finite 448
  kFloat8e5m2 = 11,  ///< CUDA's __nv_fp8_e5m2: 5 exponent and 2 mantissa bits, largest finite 57344
};
/// The number of DataType values.
inline constexpr int kNumDataTypes = 12;

/// The reduction a RedOp applies (kAvg: the sum divided by the rank count; kPreMulSum: a sum of scaled inputs).
enum class RedOpKind : int { kSum = 0, kProd = 1, kMax = 2, kMin = 3, kAvg = 4, kPreMulSum = 5 };

/// A reduction: a kind, plus for kPreMulSum the scalar (stored as double, converted to the element type).
struct RedOp {
  RedOpKind kind = RedOpKind::kSum;  ///< what it computes
  double scalar = 1.0;               ///< kPreMulSum's factor
  /// kPreMulSum on device buffers only: the scalar is read from this device address when the stream reaches the
  /// call (NCCL's ncclScalarDevice), instead of `scalar`.
  const void* scalarOnDevice = nullptr;

  /// The sum.
  static RedOp sum() { return {RedOpKind::kSum}; }
  /// The product.
  static RedOp prod() { return {RedOpKind::kProd}; }
  /// The largest.
  static RedOp max() { return {RedOpKind::kMax}; }
  /// The smallest.
  static RedOp min() { return {RedOpKind::kMin}; }
  /// The sum divided by the rank count.
  static RedOp avg() { return {RedOpKind::kAvg}; }
  /// The sum of each input times s.
  static RedOp preMulSum(double s) { return {RedOpKind::kPreMulSum, s}; }
  /// The sum of each input times the value at `scalar` on the device.
  static RedOp preMulSumOnDevice(const void* scalar) { return {RedOpKind::kPreMulSum, 1.0, scalar}; }
};

/// Size in bytes of one element; 0 for an invalid type.
size_t dataTypeSize(DataType type);
/// Short name as nccl-tests prints it ("float", "half", "bfloat16", ...); "?" for an invalid type.
const char* dataTypeName(DataType type);
/// True for a value inside the enum.
bool isValidDataType(DataType type);
/// Short name as nccl-tests prints it ("sum", "prod", "max", "min", "avg", "mulsum").
const char* redOpName(RedOpKind kind);

}  // namespace chorus

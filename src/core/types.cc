#include "chorus/types.hpp"

namespace chorus {

bool isValidDataType(DataType type) {
  int v = static_cast<int>(type);
  return v >= 0 && v < kNumDataTypes;
}

size_t dataTypeSize(DataType type) {
  switch (type) {
    case DataType::kInt8:
    case DataType::kUint8:
    case DataType::kFloat8e4m3:
    case DataType::kFloat8e5m2:
      return 1;
    case DataType::kFloat16:
    case DataType::kBfloat16:
      return 2;
    case DataType::kInt32:
    case DataType::kUint32:
    case DataType::kFloat32:
      return 4;
    case DataType::kInt64:
    case DataType::kUint64:
    case DataType::kFloat64:
      return 8;
  }
  return 0;
}

const char* dataTypeName(DataType type) {
  switch (type) {
    case DataType::kInt8:
      return "int8";
    case DataType::kUint8:
      return "uint8";
    case DataType::kInt32:
      return "int32";
    case DataType::kUint32:
      return "uint32";
    case DataType::kInt64:
      return "int64";
    case DataType::kUint64:
      return "uint64";
    case DataType::kFloat16:
      return "half";
    case DataType::kFloat32:
      return "float";
    case DataType::kFloat64:
      return "double";
    case DataType::kBfloat16:
      return "bfloat16";
    case DataType::kFloat8e4m3:
      return "f8e4m3";
    case DataType::kFloat8e5m2:
      return "f8e5m2";
  }
  return "?";
}

const char* redOpName(RedOpKind kind) {
  switch (kind) {
    case RedOpKind::kSum:
      return "sum";
    case RedOpKind::kProd:
      return "prod";
    case RedOpKind::kMax:
      return "max";
    case RedOpKind::kMin:
      return "min";
    case RedOpKind::kAvg:
      return "avg";
    case RedOpKind::kPreMulSum:
      return "mulsum";
  }
  return "?";
}

}  // namespace chorus

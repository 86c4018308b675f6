#include "kernels/element_value.hpp"

#include <cstdint>

#include "kernels/fp8.hpp"
#include "kernels/half.hpp"

namespace chorus::kernels {

double elementAsDouble(const void* p, DataType type) {
  switch (type) {
    case DataType::kInt8:
      return *static_cast<const int8_t*>(p);
    case DataType::kUint8:
      return *static_cast<const uint8_t*>(p);
    case DataType::kInt32:
      return *static_cast<const int32_t*>(p);
    case DataType::kUint32:
      return *static_cast<const uint32_t*>(p);
    case DataType::kInt64:
      return static_cast<double>(*static_cast<const int64_t*>(p));
    case DataType::kUint64:
      return static_cast<double>(*static_cast<const uint64_t*>(p));
    case DataType::kFloat16:
      return halfToFloat(*static_cast<const uint16_t*>(p));
    case DataType::kBfloat16:
      return bfloat16ToFloat(*static_cast<const uint16_t*>(p));
    case DataType::kFloat8e4m3:
      return e4m3ToFloat(*static_cast<const uint8_t*>(p));
    case DataType::kFloat8e5m2:
      return e5m2ToFloat(*static_cast<const uint8_t*>(p));
    case DataType::kFloat32:
      return *static_cast<const float*>(p);
    case DataType::kFloat64:
      return *static_cast<const double*>(p);
  }
  return 1.0;
}

}  // namespace chorus::kernels

#include "capi/nccl_comm.hpp"

#include <cstdint>
#include <cstring>

#include "kernels/half.hpp"

namespace chorus::capi {

double scalarValue(const void* p, ncclDataType_t datatype) {
  switch (datatype) {
    case ncclInt8:
      return *static_cast<const int8_t*>(p);
    case ncclUint8:
      return *static_cast<const uint8_t*>(p);
    case ncclInt32:
      return *static_cast<const int32_t*>(p);
    case ncclUint32:
      return *static_cast<const uint32_t*>(p);
    case ncclInt64:
      return static_cast<double>(*static_cast<const int64_t*>(p));
    case ncclUint64:
      return static_cast<double>(*static_cast<const uint64_t*>(p));
    case ncclFloat16:
      return kernels::halfToFloat(*static_cast<const uint16_t*>(p));
    case ncclBfloat16:
      return kernels::bfloat16ToFloat(*static_cast<const uint16_t*>(p));
    case ncclFloat32:
      return *static_cast<const float*>(p);
    case ncclFloat64:
      return *static_cast<const double*>(p);
    default:
      return 1.0;
  }
}

}  // namespace chorus::capi

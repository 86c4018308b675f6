#include "perf/data.hpp"

#include <algorithm>
#include <cstring>

#include "kernels/fp8.hpp"
#include "kernels/half.hpp"

namespace chorus::perf {

ValueKind valueKindFor(int op) {
  switch (op) {
    case ncclSum:
    case ncclAvg:
    case kMulSum:
      return ValueKind::kSum;
    case ncclProd:
      return ValueKind::kProd;
    case ncclMax:
    case ncclMin:
      return ValueKind::kMinMax;
    default:
      return ValueKind::kMove;
  }
}

namespace {

uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}

bool isUnsigned(ncclDataType_t t) { return t == ncclUint8 || t == ncclUint32 || t == ncclUint64; }
bool isFloat8(ncclDataType_t t) { return t == ncclFloat8e4m3 || t == ncclFloat8e5m2; }

// Largest integer magnitude every partial sum may reach and stay exact in the type.
double exactLimit(ncclDataType_t t) {
  switch (t) {
    case ncclFloat8e5m2:
      return 8;
    case ncclFloat8e4m3:
      return 16;
    case ncclBfloat16:
      return 256;
    case ncclFloat16:
      return 2048;
    case ncclInt8:
      return 127;  // keeps signed sums in range too
    case ncclUint8:
      return 255;
    default:
      return 1 << 20;
  }
}

}  // namespace

double inputValue(uint64_t seed, int rank, size_t index, ValueKind kind, ncclDataType_t type, int nranks) {
  uint64_t h = mix(seed * 0x9e3779b97f4a7c15ull ^ mix(static_cast<uint64_t>(rank) << 40 ^ index));
  switch (kind) {
    case ValueKind::kSum: {
      // |value| <= b with n * 2b <= limit (2b: the mulsum scalar), so every partial sum is exact.
      int64_t b = static_cast<int64_t>(exactLimit(type) / (2.0 * nranks));
      if (b > 4) b = 4;
      if (b < 1) b = 1;
      if (isUnsigned(type)) return static_cast<double>(h % static_cast<uint64_t>(b + 1));
      return static_cast<double>(static_cast<int64_t>(h % static_cast<uint64_t>(2 * b + 1)) - b);
    }
    case ValueKind::kProd:
      return h % 13 == 0 ? 2.0 : 1.0;
    case ValueKind::kMinMax:
      return isUnsigned(type) ? static_cast<double>(h % 101) : static_cast<double>(static_cast<int64_t>(h % 101) - 50);
    case ValueKind::kMove:
      return static_cast<double>(h % (isFloat8(type) ? 16 : type == ncclBfloat16 ? 256 : 2048));
  }
  return 0;
}

size_t typeSize(ncclDataType_t type) {
  switch (type) {
    case ncclInt8:
    case ncclUint8:
    case ncclFloat8e4m3:
    case ncclFloat8e5m2:
      return 1;
    case ncclFloat16:
    case ncclBfloat16:
      return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32:
      return 4;
    default:
      return 8;
  }
}

void storeValue(void* buffer, size_t position, ncclDataType_t type, double value) {
  char* p = static_cast<char*>(buffer) + position * typeSize(type);
  // Integers wrap modulo 2^bits, as the reductions do.
  const uint64_t wrapped = static_cast<uint64_t>(static_cast<int64_t>(value));
  switch (type) {
    case ncclInt8:
    case ncclUint8: {
      uint8_t v = static_cast<uint8_t>(wrapped);
      memcpy(p, &v, 1);
      break;
    }
    case ncclInt32:
    case ncclUint32: {
      uint32_t v = static_cast<uint32_t>(wrapped);
      memcpy(p, &v, 4);
      break;
    }
    case ncclInt64:
    case ncclUint64:
      memcpy(p, &wrapped, 8);
      break;
    case ncclFloat16: {
      uint16_t v = kernels::floatToHalf(static_cast<float>(value));
      memcpy(p, &v, 2);
      break;
    }
    case ncclBfloat16: {
      uint16_t v = kernels::floatToBfloat16(static_cast<float>(value));
      memcpy(p, &v, 2);
      break;
    }
    case ncclFloat8e4m3:
      *reinterpret_cast<uint8_t*>(p) = kernels::floatToE4m3(static_cast<float>(value));
      break;
    case ncclFloat8e5m2:
      *reinterpret_cast<uint8_t*>(p) = kernels::floatToE5m2(static_cast<float>(value));
      break;
    case ncclFloat32: {
      float v = static_cast<float>(value);
      memcpy(p, &v, 4);
      break;
    }
    default:
      memcpy(p, &value, 8);
      break;
  }
}

void storeReduced(void* buffer, size_t position, uint64_t seed, size_t index, int op, ncclDataType_t type, int nranks) {
  const ValueKind kind = valueKindFor(op);
  double acc = inputValue(seed, 0, index, kind, type, nranks) * (op == kMulSum ? mulSumScalar(0) : 1.0);
  uint64_t intProduct = static_cast<uint64_t>(static_cast<int64_t>(acc));
  for (int r = 1; r < nranks; ++r) {
    double v = inputValue(seed, r, index, kind, type, nranks);
    switch (op) {
      case ncclProd:
        acc *= v;
        intProduct *= static_cast<uint64_t>(static_cast<int64_t>(v));
        break;
      case ncclMax:
        acc = v > acc ? v : acc;
        break;
      case ncclMin:
        acc = v < acc ? v : acc;
        break;
      case kMulSum:
        acc += v * mulSumScalar(r);
        break;
      default:
        acc += v;
        break;
    }
  }
  const bool isFloat =
      type == ncclFloat16 || type == ncclBfloat16 || type == ncclFloat32 || type == ncclFloat64 || isFloat8(type);
  if (op == ncclProd && !isFloat) {
    storeValue(buffer, position, type, static_cast<double>(static_cast<int64_t>(intProduct)));
    return;
  }
  if (op == ncclAvg) {
    if (isFloat) {
      // The sum is exact in the type; the division is rounded once in float (or double) like the library does.
      if (type == ncclFloat64)
        acc = acc / nranks;
      else
        acc = static_cast<float>(acc) / static_cast<float>(nranks);
    } else {
      // Integer avg: the wrapped sum divided with truncation, in the element type.
      storeValue(buffer, position, type, acc);
      char tmp[8];
      memcpy(tmp, static_cast<char*>(buffer) + position * typeSize(type), typeSize(type));
      int64_t s = 0;
      switch (type) {
        case ncclInt8:
          s = static_cast<int8_t>(tmp[0]);
          break;
        case ncclUint8:
          s = static_cast<uint8_t>(tmp[0]);
          break;
        case ncclInt32: {
          int32_t v;
          memcpy(&v, tmp, 4);
          s = v;
          break;
        }
        case ncclUint32: {
          uint32_t v;
          memcpy(&v, tmp, 4);
          s = v;
          break;
        }
        default:
          memcpy(&s, tmp, 8);
          break;
      }
      if (type == ncclUint64)
        acc = static_cast<double>(static_cast<uint64_t>(s) / static_cast<uint64_t>(nranks));
      else
        acc = static_cast<double>(s / nranks);
    }
  }
  storeValue(buffer, position, type, acc);
}

size_t countMismatches(const void* actual, const void* expected, size_t count, ncclDataType_t type, size_t* firstBad) {
  const size_t e = typeSize(type);
  const char* a = static_cast<const char*>(actual);
  const char* x = static_cast<const char*>(expected);
  size_t wrong = 0;
  for (size_t i = 0; i < count; ++i) {
    if (memcmp(a + i * e, x + i * e, e) != 0) {
      if (wrong == 0 && firstBad) *firstBad = i;
      ++wrong;
    }
  }
  return wrong;
}

void fillBackground(void* buffer, size_t bytes, ncclDataType_t type) {
  auto* out = static_cast<char*>(buffer);
  const size_t e = typeSize(type);
  if (bytes < e) {
    memset(out, 1, bytes);
    return;
  }
  storeValue(out, 0, type, 1.0);
  // The element, doubled until the buffer is full.
  size_t filled = e;
  while (filled < bytes) {
    const size_t n = std::min(filled, bytes - filled);
    memcpy(out + filled, out, n);
    filled += n;
  }
}

}  // namespace chorus::perf

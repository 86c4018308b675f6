#include "tests/support/reference.hpp"

#include <cstring>

#include "perf/data.hpp"

namespace chorus::testing {
namespace {

bool isUnsigned(DataType t) { return t == DataType::kUint8 || t == DataType::kUint32 || t == DataType::kUint64; }
bool isFloat8(DataType t) { return t == DataType::kFloat8e4m3 || t == DataType::kFloat8e5m2; }
bool isFloat(DataType t) {
  return t == DataType::kFloat16 || t == DataType::kBfloat16 || t == DataType::kFloat32 || t == DataType::kFloat64 ||
         isFloat8(t);
}

int64_t readInteger(const unsigned char* p, DataType t) {
  switch (t) {
    case DataType::kInt8:
      return static_cast<int8_t>(p[0]);
    case DataType::kUint8:
      return p[0];
    case DataType::kInt32: {
      int32_t v;
      memcpy(&v, p, 4);
      return v;
    }
    case DataType::kUint32: {
      uint32_t v;
      memcpy(&v, p, 4);
      return v;
    }
    default: {
      int64_t v;
      memcpy(&v, p, 8);
      return v;
    }
  }
}

}  // namespace

double inputValue(const RedOp* op, DataType type, int rank, size_t index, int seed) {
  const int k = static_cast<int>((index + 5 * static_cast<size_t>(rank) + static_cast<size_t>(seed)) % 13);
  if (!op) return static_cast<double>((index * 7 + static_cast<size_t>(rank) * 13 + seed) % 251);
  switch (op->kind) {
    case RedOpKind::kProd:
      return k == 0 ? 2.0 : 1.0;
    case RedOpKind::kMax:
    case RedOpKind::kMin:
      return isUnsigned(type) ? k * 3.0 : k * 3.0 - 18.0;
    default:
      // 8-bit floats hold the integers exactly only up to 8 (e5m2): at most two ranks (k = 0 and k = 1, as 5 is
      // invertible mod 13) give a nonzero value, so every partial sum stays within 4.
      if (isFloat8(type)) return k == 0 ? 1.0 : k == 1 ? -1.0 : 0.0;
      return isUnsigned(type) ? k % 3 : k % 5 - 2;  // |sum| <= 2 * 2 * 64 = 256: exact even in bfloat16
  }
}

Reduced::Reduced(RedOp op, DataType type, int nranks, int seed) : type_(type), seed_(seed) {
  for (size_t i = 0; i < 13; ++i) {
    double acc = 0;
    uint64_t intAcc = 0;
    for (int r = 0; r < nranks; ++r) {
      double v = inputValue(&op, type, r, i, seed);
      if (op.kind == RedOpKind::kPreMulSum) v *= preMulScalar(r);
      const uint64_t iv = static_cast<uint64_t>(static_cast<int64_t>(v));
      if (r == 0) {
        acc = v;
        intAcc = iv;
        continue;
      }
      switch (op.kind) {
        case RedOpKind::kProd:
          acc *= v;
          intAcc *= iv;
          break;
        case RedOpKind::kMax:
          acc = v > acc ? v : acc;
          break;
        case RedOpKind::kMin:
          acc = v < acc ? v : acc;
          break;
        default:
          acc += v;
          intAcc += iv;
          break;
      }
    }
    unsigned char* out = bytes_[i].data();
    if (op.kind == RedOpKind::kAvg) {
      if (type == DataType::kFloat64) {
        acc /= nranks;
      } else if (isFloat(type)) {
        acc = static_cast<float>(acc) / static_cast<float>(nranks);  // the sum is exact; one rounding in float
      } else {
        storeValue(out, 0, type, acc);  // the sum, wrapped in the element type
        int64_t s = readInteger(out, type);
        acc = type == DataType::kUint64 ? static_cast<double>(static_cast<uint64_t>(s) / static_cast<uint64_t>(nranks))
                                        : static_cast<double>(s / nranks);
      }
    } else if (!isFloat(type) &&
               (op.kind == RedOpKind::kProd || op.kind == RedOpKind::kSum || op.kind == RedOpKind::kPreMulSum)) {
      acc = static_cast<double>(static_cast<int64_t>(intAcc));
    }
    storeValue(out, 0, type, acc);
  }
}

void Reduced::store(void* buffer, size_t pos, size_t index) const {
  const size_t e = dataTypeSize(type_);
  memcpy(static_cast<char*>(buffer) + pos * e, bytes_[index % 13].data(), e);
}

void storeValue(void* buffer, size_t pos, DataType type, double value) {
  perf::storeValue(buffer, pos, static_cast<ncclDataType_t>(type), value);
}

size_t mismatches(const void* actual, const void* expected, size_t count, DataType type, size_t* firstBad) {
  return perf::countMismatches(actual, expected, count, static_cast<ncclDataType_t>(type), firstBad);
}

}  // namespace chorus::testing

#include "soak/soak_calls.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

namespace soak {
namespace {

uint64_t mix(uint64_t x) {  // splitmix64's finalizer: the same on every rank and every build
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

class Random {
 public:
  explicit Random(uint64_t seed) : state_(mix(seed)) {}
  uint64_t next() { return state_ = mix(state_); }
  /// Uniform in [lo, hi].
  int64_t in(int64_t lo, int64_t hi) { return lo + static_cast<int64_t>(next() % static_cast<uint64_t>(hi - lo + 1)); }
  bool chance(int percent) { return in(0, 99) < percent; }

 private:
  uint64_t state_;
};

uint64_t hash(uint64_t seed, size_t call, size_t index, int rank, size_t i) {
  return mix(mix(mix(mix(seed) ^ call) ^ (index * 0x100000001b3ULL)) ^ (static_cast<uint64_t>(rank) << 40 ^ i));
}

bool isSigned(ncclDataType_t t) { return t != ncclUint8 && t != ncclUint32 && t != ncclUint64; }

// The largest magnitude below which every integer, and so every partial result of the soak's reductions, is exact.
int64_t exactLimit(ncclDataType_t t) {
  switch (t) {
    case ncclInt8:
      return 127;
    case ncclUint8:
      return 255;
    case ncclFloat16:
      return 2048;
    case ncclBfloat16:
      return 256;
    case ncclFloat8e4m3:
      return 16;
    case ncclFloat8e5m2:
      return 8;
    default:
      return 1000;
  }
}

struct FloatFormat {
  int exponentBits, mantissaBits, bias;
};

bool floatFormat(ncclDataType_t t, FloatFormat* f) {
  switch (t) {
    case ncclFloat16:
      *f = {5, 10, 15};
      return true;
    case ncclBfloat16:
      *f = {8, 7, 127};
      return true;
    case ncclFloat8e4m3:
      *f = {4, 3, 7};
      return true;
    case ncclFloat8e5m2:
      *f = {5, 2, 15};
      return true;
    default:
      return false;
  }
}

uint32_t encodeNarrow(const FloatFormat& f, double v) {
  const uint32_t sign = v < 0 ? 1u << (f.exponentBits + f.mantissaBits) : 0;
  const double a = std::fabs(v);
  if (a == 0) return sign;
  const int e = static_cast<int>(std::floor(std::log2(a)));
  const double mantissa = (a / std::ldexp(1.0, e) - 1) * std::ldexp(1.0, f.mantissaBits);
  if (mantissa != std::floor(mantissa) || e + f.bias <= 0) throw std::logic_error("value not exact in its type");
  return sign | static_cast<uint32_t>(e + f.bias) << f.mantissaBits | static_cast<uint32_t>(mantissa);
}

double decodeNarrow(const FloatFormat& f, uint32_t bits) {
  const uint32_t mantissa = bits & ((1u << f.mantissaBits) - 1);
  const uint32_t exponent = (bits >> f.mantissaBits) & ((1u << f.exponentBits) - 1);
  const bool negative = (bits >> (f.exponentBits + f.mantissaBits)) & 1;
  const bool e4m3 = f.exponentBits == 4;  // e4m3 ("fn") has no infinities; its one NaN is all ones
  if ((!e4m3 && exponent == (1u << f.exponentBits) - 1) || (e4m3 && exponent == 15 && mantissa == 7)) return NAN;
  const double m = exponent == 0 ? mantissa : mantissa + std::ldexp(1.0, f.mantissaBits);
  const double v = std::ldexp(m, static_cast<int>(exponent == 0 ? 1 : exponent) - f.bias - f.mantissaBits);
  return negative ? -v : v;
}

const char* typeName(ncclDataType_t t) {
  static const char* names[] = {"int8", "uint8", "int32",  "uint32",   "int64",   "uint64",
                                "half", "float", "double", "bfloat16", "fp8e4m3", "fp8e5m2"};
  return t >= 0 && t < ncclNumTypes ? names[t] : "?";
}

const char* kindName(Kind k) {
  static const char* names[] = {"AllReduce", "Broadcast", "Reduce",  "AllGather", "ReduceScatter",
                                "AlltoAll",  "Gather",    "Scatter", "Send"};
  return names[static_cast<int>(k)];
}

bool reduces(Kind k) { return k == Kind::kAllReduce || k == Kind::kReduce || k == Kind::kReduceScatter; }

// How many of `count` a rank's largest buffer of the item holds.
size_t bufferFactor(Kind k, int nranks) {
  switch (k) {
    case Kind::kAllGather:
    case Kind::kReduceScatter:
    case Kind::kAlltoAll:
    case Kind::kGather:
    case Kind::kScatter:
      return nranks;
    default:
      return 1;
  }
}

size_t randomCount(Random& rng, size_t most) {
  const int64_t band = rng.in(0, 99);
  size_t count;
  if (band < 6) {
    count = 0;
  } else if (band < 40) {
    count = rng.in(1, 16);
  } else if (band < 75) {
    count = rng.in(17, 4096) | 1;  // odd, so that no split into ranks or chunks comes out even
  } else if (band < 95) {
    count = rng.in(4097, 65536);
  } else {
    count = rng.in(65537, std::max<int64_t>(65537, most));
  }
  return std::min(count, most);
}

Item randomCollective(Random& rng, const Shape& shape) {
  static const Kind kinds[] = {Kind::kAllReduce, Kind::kAllReduce, Kind::kAllReduce,     Kind::kBroadcast,
                               Kind::kReduce,    Kind::kAllGather, Kind::kReduceScatter, Kind::kAlltoAll,
                               Kind::kGather,    Kind::kScatter};
  Item item;
  item.kind = kinds[rng.in(0, std::size(kinds) - 1)];
  item.type = static_cast<ncclDataType_t>(rng.in(0, ncclNumTypes - 1));
  if (reduces(item.kind)) {
    item.op = static_cast<int>(rng.in(0, ncclNumOps));  // ncclNumOps stands for a PreMulSum
    if (item.op == ncclNumOps) item.scalar = static_cast<int>(rng.in(1, 3));
  }
  item.root = static_cast<int>(rng.in(0, shape.nranks - 1));
  const size_t most = shape.maxBytes / (typeSize(item.type) * bufferFactor(item.kind, shape.nranks));
  item.count = randomCount(rng, most);
  item.inPlace = item.kind != Kind::kAlltoAll && rng.chance(50);
  item.memAlloc = rng.chance(10);
  return item;
}

Item randomTransfer(Random& rng, const Shape& shape, bool samePeerAllowed) {
  Item item;
  item.kind = Kind::kSend;
  item.type = static_cast<ncclDataType_t>(rng.in(0, ncclNumTypes - 1));
  item.root = static_cast<int>(rng.in(0, shape.nranks - 1));
  do {
    item.peer = static_cast<int>(rng.in(0, shape.nranks - 1));
  } while (!samePeerAllowed && item.peer == item.root && shape.nranks > 1);
  item.count = randomCount(rng, shape.maxBytes / typeSize(item.type));
  item.memAlloc = rng.chance(10);
  return item;
}

}  // namespace

size_t typeSize(ncclDataType_t t) {
  switch (t) {
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

double decode(ncclDataType_t t, const void* p) {
  FloatFormat f;
  if (floatFormat(t, &f)) {
    uint32_t bits = 0;
    memcpy(&bits, p, typeSize(t));  // little-endian
    return decodeNarrow(f, bits);
  }
  switch (t) {
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
    case ncclFloat32:
      return *static_cast<const float*>(p);
    default:
      return *static_cast<const double*>(p);
  }
}

void encode(ncclDataType_t t, double v, void* p) {
  FloatFormat f;
  if (floatFormat(t, &f)) {
    const uint32_t bits = encodeNarrow(f, v);
    memcpy(p, &bits, typeSize(t));
    return;
  }
  switch (t) {
    case ncclInt8:
      *static_cast<int8_t*>(p) = static_cast<int8_t>(v);
      return;
    case ncclUint8:
      *static_cast<uint8_t*>(p) = static_cast<uint8_t>(v);
      return;
    case ncclInt32:
      *static_cast<int32_t*>(p) = static_cast<int32_t>(v);
      return;
    case ncclUint32:
      *static_cast<uint32_t*>(p) = static_cast<uint32_t>(v);
      return;
    case ncclInt64:
      *static_cast<int64_t*>(p) = static_cast<int64_t>(v);
      return;
    case ncclUint64:
      *static_cast<uint64_t*>(p) = static_cast<uint64_t>(v);
      return;
    case ncclFloat32:
      *static_cast<float*>(p) = static_cast<float>(v);
      return;
    default:
      *static_cast<double*>(p) = v;
  }
}

double inputValue(uint64_t seed, size_t call, size_t index, const Item& item, int nranks, int rank, size_t i) {
  const uint64_t h = hash(seed, call, index, rank, i);
  const int64_t limit = exactLimit(item.type);
  const bool sign = isSigned(item.type);
  auto within = [&](int64_t m, uint64_t bits) {  // in [-m, m], or [0, m] for unsigned types
    const int64_t lo = sign ? -m : 0;
    return static_cast<double>(lo + static_cast<int64_t>(bits % static_cast<uint64_t>(m - lo + 1)));
  };
  if (!reduces(item.kind) || item.op == ncclMax || item.op == ncclMin) return within(std::min<int64_t>(limit, 100), h);
  if (item.op == ncclProd) {
    // At most log2(limit) ranks give a 2, so that any product of some of the inputs stays exact.
    const int twos = static_cast<int>(std::floor(std::log2(static_cast<double>(limit))));
    const double magnitude = rank < twos && h % 3 == 0 ? 2 : 1;
    return sign && (h >> 8) % 4 == 0 ? -magnitude : magnitude;
  }
  if (item.op == ncclAvg) {
    // A base every rank shares, with offsets that cancel in pairs: the sum is nranks times the base, so the average is
    // exactly the base.
    const uint64_t shared = hash(seed, call, index, -1, i);
    const int64_t m = limit / nranks;
    const int64_t offset = sign ? static_cast<int64_t>(within(m / 2, shared >> 16)) : 0;
    const int64_t d = sign ? std::abs(offset) : static_cast<int64_t>((shared >> 16) % (m / 3 + 1));
    const int64_t base =
        sign ? static_cast<int64_t>(within(m / 2, shared)) : d + static_cast<int64_t>(shared % (m / 3 + 1));
    if (rank % 2 == 0 && rank + 1 < nranks) return static_cast<double>(base + d);
    if (rank % 2 == 1) return static_cast<double>(base - d);
    return static_cast<double>(base);
  }
  return within(limit / (static_cast<int64_t>(nranks) * item.scalar), h);  // sum and PreMulSum
}

double reducedValue(uint64_t seed, size_t call, size_t index, const Item& item, int nranks, size_t i) {
  double acc = inputValue(seed, call, index, item, nranks, 0, i) * (item.op == ncclNumOps ? item.scalar : 1);
  for (int r = 1; r < nranks; ++r) {
    const double v = inputValue(seed, call, index, item, nranks, r, i);
    switch (item.op) {
      case ncclProd:
        acc *= v;
        break;
      case ncclMax:
        acc = std::max(acc, v);
        break;
      case ncclMin:
        acc = std::min(acc, v);
        break;
      case ncclNumOps:
        acc += v * item.scalar;
        break;
      default:
        acc += v;
    }
  }
  return item.op == ncclAvg ? acc / nranks : acc;
}

std::vector<Call> makeCalls(uint64_t seed, size_t count, const Shape& shape) {
  Random rng(seed);
  std::vector<Call> calls(count);
  for (Call& call : calls) {
    const int64_t shape_ = rng.in(0, 99);
    if (shape_ < 50) {
      call.items.push_back(randomCollective(rng, shape));
    } else if (shape_ < 60 && shape.nranks > 1) {
      call.items.push_back(randomTransfer(rng, shape, false));  // an ungrouped Send and its Recv
    } else {
      call.grouped = true;
      const bool collectives = shape_ < 80, transfers = shape_ >= 70 || shape_ < 60;
      const int64_t n = rng.in(1, 2 * shape.nranks);
      for (int64_t k = 0; k < n; ++k) {
        const bool transfer = transfers && (!collectives || rng.chance(50));
        call.items.push_back(transfer ? randomTransfer(rng, shape, true) : randomCollective(rng, shape));
      }
    }
  }
  return calls;
}

std::string describe(const Item& item) {
  static const char* ops[] = {"sum", "prod", "max", "min", "avg"};
  std::string s =
      std::string(kindName(item.kind)) + "(" + typeName(item.type) + ", count " + std::to_string(item.count);
  if (item.kind == Kind::kSend) {
    s += ", " + std::to_string(item.root) + " -> " + std::to_string(item.peer);
  } else {
    if (reduces(item.kind))
      s += item.op == ncclNumOps ? ", premulsum x" + std::to_string(item.scalar) : std::string(", ") + ops[item.op];
    if (item.kind == Kind::kBroadcast || item.kind == Kind::kReduce || item.kind == Kind::kGather ||
        item.kind == Kind::kScatter)
      s += ", root " + std::to_string(item.root);
    if (item.inPlace) s += ", in place";
  }
  if (item.memAlloc) s += ", ncclMemAlloc";
  return s + ")";
}

std::string describe(const Call& call) {
  if (!call.grouped) return describe(call.items[0]);
  std::string s = "group {";
  for (size_t i = 0; i < call.items.size(); ++i) s += (i ? "; " : " ") + describe(call.items[i]);
  return s + " }";
}

}  // namespace soak

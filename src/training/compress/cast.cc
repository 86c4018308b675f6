// Casting codecs: the bucket travels and is summed as bf16 or fp16 (half the bytes), then widens back to fp32.
// Rounding is to nearest even, as the hardware conversions do; fp16 overflows to infinity beyond 65504, which is
// what dynamic loss scaling watches for. Nothing is kept back: the rounding error is lost.
#include <cmath>
#include <cstring>

#include "chorus/training/compress/codec.hpp"

namespace chorus::training::compress {
namespace {

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float fromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

uint16_t toBf16(float f) {
  const uint32_t u = bits(f);
  if (std::isnan(f)) return static_cast<uint16_t>((u >> 16) | 0x40);  // stays a (quiet) NaN
  return static_cast<uint16_t>((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}
float fromBf16(uint16_t h) { return fromBits(static_cast<uint32_t>(h) << 16); }

uint16_t toFp16(float f) {
  const uint32_t u = bits(f), sign = (u >> 16) & 0x8000;
  const float a = std::fabs(f);
  if (std::isnan(f)) return static_cast<uint16_t>(sign | 0x7e00);
  if (a >= 65520.0f) return static_cast<uint16_t>(sign | 0x7c00);  // rounds to infinity
  if (a < 6.103515625e-05f) {                                      // subnormal: multiples of 2^-24
    const float scaled = a * 16777216.0f;                          // exact
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(std::nearbyint(scaled)));
  }
  const uint32_t mag = bits(a);
  const uint32_t rounded = mag + 0xfff + ((mag >> 13) & 1);  // to nearest even at 10 mantissa bits
  return static_cast<uint16_t>(sign | (((rounded >> 13) - (112u << 10)) & 0x7fff));
}
float fromFp16(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16, exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  if (exponent == 0) return fromBits(sign) + (sign ? -1.0f : 1.0f) * std::ldexp(static_cast<float>(mantissa), -24);
  if (exponent == 31) return fromBits(sign | 0x7f800000 | (mantissa << 13));
  return fromBits(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

class CastCodec : public GradientCodec {
 public:
  explicit CastCodec(bool bf16) : bf16_(bf16) {}
  std::string name() const override { return bf16_ ? "bf16" : "fp16"; }
  Request start(Communicator& comm, int bucket, float* g, size_t n) override {
    std::vector<uint16_t>& s = stage(bucket, g, n);
    return comm.allReduceAsync(s.data(), s.data(), n, type(), RedOp::sum());
  }
  Status finish(int bucket, float* g, size_t n) override {
    const std::vector<uint16_t>& s = staging_[bucket];
    for (size_t i = 0; i < n; ++i) g[i] = bf16_ ? fromBf16(s[i]) : fromFp16(s[i]);
    return Status::ok();
  }
  // ZeRO: a ReduceScatter of the narrow type, half the bytes of fp32's.
  Request startShard(Communicator& comm, int bucket, float* g, size_t n) override {
    std::vector<uint16_t>& s = stage(bucket, g, n);
    std::vector<uint16_t>& shard = shards_[bucket];
    shard.resize(n / static_cast<size_t>(comm.size()));
    return comm.reduceScatterAsync(s.data(), shard.data(), shard.size(), type(), RedOp::sum());
  }
  Status finishShard(int bucket, float*, size_t n, int, int ranks, float* shard) override {
    const std::vector<uint16_t>& s = shards_[bucket];
    for (size_t i = 0; i < n / static_cast<size_t>(ranks); ++i) shard[i] = bf16_ ? fromBf16(s[i]) : fromFp16(s[i]);
    return Status::ok();
  }

 private:
  DataType type() const { return bf16_ ? DataType::kBfloat16 : DataType::kFloat16; }
  // The bucket rounded into its staging buffer.
  std::vector<uint16_t>& stage(int bucket, const float* g, size_t n) {
    if (static_cast<size_t>(bucket) >= staging_.size()) staging_.resize(bucket + 1), shards_.resize(bucket + 1);
    std::vector<uint16_t>& s = staging_[bucket];
    s.resize(n);
    for (size_t i = 0; i < n; ++i) s[i] = bf16_ ? toBf16(g[i]) : toFp16(g[i]);
    return s;
  }

  bool bf16_;
  std::vector<std::vector<uint16_t>> staging_, shards_;  // per bucket: the rounded bucket, its summed shard
};

Status make(bool bf16, const std::string& argument, std::unique_ptr<GradientCodec>* out) {
  if (!argument.empty()) return invalidArgument("takes no argument");
  *out = std::make_unique<CastCodec>(bf16);
  return Status::ok();
}

}  // namespace

float roundToBf16(float x) { return fromBf16(toBf16(x)); }
float roundToFp16(float x) { return fromFp16(toFp16(x)); }

CHORUS_REGISTER_GRADIENT_CODEC(bf16, "bf16", "the bucket summed as bfloat16",
                               [](const std::string& a, std::unique_ptr<GradientCodec>* out) {
                                 return make(true, a, out);
                               });
CHORUS_REGISTER_GRADIENT_CODEC(fp16, "fp16", "the bucket summed as float16 (overflows to infinity past 65504)",
                               [](const std::string& a, std::unique_ptr<GradientCodec>* out) {
                                 return make(false, a, out);
                               });

}  // namespace chorus::training::compress

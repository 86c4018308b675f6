/// @file codec.hpp
/// Gradient codecs: how a data-parallel gradient bucket crosses the wire. A codec starts the bucket's sum over the
/// ranks (an AllReduce of a narrower type, an AllGather of the largest entries, ...) and, once that completed,
/// writes the sum back into the bucket as fp32. Codecs that drop information keep what they dropped (error
/// feedback) and add it to the bucket's next gradient. One file per codec, registered by name.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "chorus/communicator.hpp"

namespace chorus::training::compress {

class GradientCodec {
 public:
  virtual ~GradientCodec() = default;
  virtual std::string name() const = 0;
  /// Starts summing bucket `bucket`'s gradients `g` [n] over `comm`. `g` must stay untouched until finish().
  virtual Request start(Communicator& comm, int bucket, float* g, size_t n) = 0;
  /// After start()'s Request completed: the sum over the ranks into `g`.
  virtual Status finish(int bucket, float* g, size_t n) = 0;

  /// ZeRO's form: starts summing `g` [n] over `comm` when each rank keeps only its shard of the sum, elements
  /// [rank n / ranks, (rank + 1) n / ranks) (n a multiple of the rank count). `g` must stay untouched until
  /// finishShard(). By default the whole sum, as start(); a codec whose sum can be scattered overrides both.
  virtual Request startShard(Communicator& comm, int bucket, float* g, size_t n) { return start(comm, bucket, g, n); }
  /// After startShard()'s Request completed: this rank's shard of the sum into `shard` [n / ranks].
  virtual Status finishShard(int bucket, float* g, size_t n, int rank, int ranks, float* shard);
};

/// A codec by its spec: "bf16", "fp16", "topk:<fraction>" (e.g. "topk:0.01"), "powersgd:<rank>[:<start step>]"; an
/// error naming the known ones.
Status makeCodec(const std::string& spec, std::unique_ptr<GradientCodec>* out);

struct CodecRegistration {
  const char* name;
  const char* description;
  /// Makes the codec from the text after "name:" (empty when there is none).
  std::function<Status(const std::string& argument, std::unique_ptr<GradientCodec>*)> make;
};
struct CodecRegistrar {
  explicit CodecRegistrar(CodecRegistration registration);
};
#define CHORUS_REGISTER_GRADIENT_CODEC(ident, ...) \
  static const ::chorus::training::compress::CodecRegistrar ident##_codec_registrar({__VA_ARGS__})

const std::vector<CodecRegistration>& codecs();

/// x rounded to the nearest bf16 / fp16 value (ties to even; fp16 overflows to infinity past 65504).
float roundToBf16(float x);
float roundToFp16(float x);

}  // namespace chorus::training::compress

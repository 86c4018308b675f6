#include "chorus/training/compress/codec.hpp"

#include <algorithm>

namespace chorus::training::compress {

namespace {
std::vector<CodecRegistration>& registry() {
  static std::vector<CodecRegistration> all;
  return all;
}
}  // namespace

CodecRegistrar::CodecRegistrar(CodecRegistration registration) { registry().push_back(std::move(registration)); }

const std::vector<CodecRegistration>& codecs() { return registry(); }

Status GradientCodec::finishShard(int bucket, float* g, size_t n, int rank, int ranks, float* shard) {
  CHORUS_TRY(finish(bucket, g, n));
  const size_t count = n / static_cast<size_t>(ranks);
  std::copy_n(g + count * static_cast<size_t>(rank), count, shard);
  return Status::ok();
}

Status makeCodec(const std::string& spec, std::unique_ptr<GradientCodec>* out) {
  const size_t colon = spec.find(':');
  const std::string name = spec.substr(0, colon), argument = colon == std::string::npos ? "" : spec.substr(colon + 1);
  std::string known;
  for (const CodecRegistration& c : registry()) {
    if (name == c.name) return c.make(argument, out).withContext("gradient codec '" + spec + "'");
    known += (known.empty() ? "" : ", ") + std::string(c.name);
  }
  return invalidArgument("unknown gradient codec '" + spec + "' (known: " + known + ")");
}

}  // namespace chorus::training::compress

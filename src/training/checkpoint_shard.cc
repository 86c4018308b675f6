#include "checkpoint_shard.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace chorus::training {
namespace {

constexpr char kMagic[8] = {'C', 'H', 'O', 'R', 'U', 'S', 'S', 'H'};
constexpr uint64_t kVersion = 1;

void put(std::string* out, uint64_t v) { out->append(reinterpret_cast<const char*>(&v), sizeof v); }
void put(std::string* out, const std::vector<float>& v) {
  out->append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

// Reads from `bytes` in order; once one read falls short, every later one does too.
class Reader {
 public:
  explicit Reader(const std::string& bytes) : bytes_(bytes) {}
  bool take(void* out, size_t n) {
    if (n > bytes_.size() - at_) return false;
    memcpy(out, bytes_.data() + at_, n);
    at_ += n;
    return true;
  }
  bool take(uint64_t* v) { return take(v, sizeof *v); }
  bool take(std::vector<float>* v, size_t count) {
    if (count > (bytes_.size() - at_) / sizeof(float)) return false;
    v->resize(count);
    return take(v->data(), count * sizeof(float));
  }
  bool atEnd() const { return at_ == bytes_.size(); }

 private:
  const std::string& bytes_;
  size_t at_ = 0;
};

}  // namespace

std::string encodeShard(const CheckpointShard& shard, const ShardOrigin& origin) {
  std::string out(kMagic, sizeof kMagic);
  for (uint64_t v : {kVersion, static_cast<uint64_t>(shard.step), static_cast<uint64_t>(origin.rank),
                     static_cast<uint64_t>(origin.nranks), static_cast<uint64_t>(origin.params),
                     static_cast<uint64_t>(shard.state.size()), static_cast<uint64_t>(shard.ranges.size())})
    put(&out, v);
  for (const auto& [offset, count] : shard.ranges) {
    put(&out, offset);
    put(&out, count);
  }
  put(&out, shard.params);
  for (const auto& v : shard.state) put(&out, v);
  return out;
}

Status decodeShard(const std::string& bytes, CheckpointShard* shard, ShardOrigin* origin) {
  Reader in(bytes);
  char magic[sizeof kMagic];
  uint64_t version = 0, step = 0, rank = 0, nranks = 0, params = 0, vectors = 0, ranges = 0;
  if (!in.take(magic, sizeof magic) || memcmp(magic, kMagic, sizeof magic) != 0 || !in.take(&version) ||
      version != kVersion)
    return invalidArgument("not a chorus checkpoint shard (version 1)");
  if (!in.take(&step) || !in.take(&rank) || !in.take(&nranks) || !in.take(&params) || !in.take(&vectors) ||
      !in.take(&ranges))
    return invalidArgument("checkpoint shard: truncated header");
  if (rank >= nranks || nranks > (1u << 20) || vectors > 16 || ranges > params || params > (uint64_t{1} << 34))
    return invalidArgument("checkpoint shard: implausible header");
  *shard = CheckpointShard{};
  shard->step = static_cast<long>(step);
  uint64_t elements = 0, end = 0;
  for (uint64_t i = 0; i < ranges; ++i) {
    uint64_t offset = 0, count = 0;
    if (!in.take(&offset) || !in.take(&count)) return invalidArgument("checkpoint shard: truncated ranges");
    if (offset < end || count > params || offset > params - count)
      return invalidArgument("checkpoint shard: ranges out of order or outside the state");
    end = offset + count;
    elements += count;
    shard->ranges.emplace_back(offset, count);
  }
  if (!in.take(&shard->params, elements)) return invalidArgument("checkpoint shard: truncated parameters");
  shard->state.resize(vectors);
  for (auto& v : shard->state)
    if (!in.take(&v, elements)) return invalidArgument("checkpoint shard: truncated state");
  if (!in.atEnd()) return invalidArgument("checkpoint shard: bytes after its end");
  *origin = ShardOrigin{static_cast<int>(rank), static_cast<int>(nranks), static_cast<size_t>(params)};
  return Status::ok();
}

void placeShard(const CheckpointShard& shard, Checkpoint* whole) {
  size_t packed = 0;
  for (const auto& [offset, count] : shard.ranges) {
    std::copy_n(shard.params.begin() + static_cast<long>(packed), count,
                whole->params.begin() + static_cast<long>(offset));
    for (size_t k = 0; k < shard.state.size(); ++k)
      std::copy_n(shard.state[k].begin() + static_cast<long>(packed), count,
                  whole->state[k].begin() + static_cast<long>(offset));
    packed += count;
  }
}

}  // namespace chorus::training

// Checkpoint file: "CHORUSCK", then little-endian u64 fields: version (1), parameter count P, state vector count
// K, step; then P floats of parameters and K x P floats of state.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>

#include "chorus/training/trainer.hpp"

namespace chorus::training {
namespace {
constexpr char kMagic[8] = {'C', 'H', 'O', 'R', 'U', 'S', 'C', 'K'};
using File = std::unique_ptr<FILE, int (*)(FILE*)>;
}  // namespace

Status writeCheckpoint(const std::string& path, const Checkpoint& ck) {
  File f(fopen(path.c_str(), "wb"), fclose);
  if (!f) return systemError("checkpoint " + path + ": cannot create: " + strerror(errno));
  const uint64_t header[4] = {1, ck.params.size(), ck.state.size(), static_cast<uint64_t>(ck.step)};
  bool ok = fwrite(kMagic, 1, 8, f.get()) == 8 && fwrite(header, sizeof header, 1, f.get()) == 1 &&
            fwrite(ck.params.data(), sizeof(float), ck.params.size(), f.get()) == ck.params.size();
  for (const auto& v : ck.state) {
    if (v.size() != ck.params.size()) return invalidArgument("checkpoint: a state vector's length differs");
    ok = ok && fwrite(v.data(), sizeof(float), v.size(), f.get()) == v.size();
  }
  if (!ok || fflush(f.get()) != 0) return systemError("checkpoint " + path + ": write failed: " + strerror(errno));
  return Status::ok();
}

Status readCheckpoint(const std::string& path, Checkpoint* ck) {
  File f(fopen(path.c_str(), "rb"), fclose);
  if (!f) return systemError("checkpoint " + path + ": cannot open: " + strerror(errno));
  char magic[8];
  uint64_t header[4];
  if (fread(magic, 1, 8, f.get()) != 8 || memcmp(magic, kMagic, 8) != 0 ||
      fread(header, sizeof header, 1, f.get()) != 1 || header[0] != 1) {
    return invalidArgument("checkpoint " + path + ": not a chorus checkpoint (version 1)");
  }
  const uint64_t p = header[1], k = header[2];
  if (k > 16 || p > (uint64_t{1} << 34)) return invalidArgument("checkpoint " + path + ": implausible header");
  ck->step = static_cast<long>(header[3]);
  ck->params.resize(p);
  ck->state.assign(k, std::vector<float>(p));
  bool ok = fread(ck->params.data(), sizeof(float), p, f.get()) == p;
  for (auto& v : ck->state) ok = ok && fread(v.data(), sizeof(float), p, f.get()) == p;
  if (!ok) return invalidArgument("checkpoint " + path + ": truncated");
  return Status::ok();
}

Status checkCheckpointShape(const Checkpoint& ck, size_t params, size_t stateVectors) {
  if (ck.params.size() == params && ck.state.size() == stateVectors) return Status::ok();
  return invalidArgument("checkpoint has " + std::to_string(ck.params.size()) + " parameters and " +
                         std::to_string(ck.state.size()) + " state vectors; this model has " + std::to_string(params) +
                         " and " + std::to_string(stateVectors));
}

}  // namespace chorus::training

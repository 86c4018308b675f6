// A CheckpointShard as bytes: what a rank sends its buddy and writes to disk. "CHORUSSH", then little-endian u64
// fields: version (1), step, the rank and rank count it was kept with, the whole state's parameter count P, state
// vector count K, range count R; R {offset, count} pairs; the packed parameters; K packed state vectors.
#pragma once

#include <string>

#include "chorus/training/trainer.hpp"

namespace chorus::training {

struct ShardOrigin {
  int rank = 0, nranks = 0;
  size_t params = 0;  // P of the whole state
};

std::string encodeShard(const CheckpointShard& shard, const ShardOrigin& origin);
/// An error naming what is wrong unless `bytes` is a whole, consistent encoded shard.
Status decodeShard(const std::string& bytes, CheckpointShard* shard, ShardOrigin* origin);
/// Copies the shard's elements into their places in `whole` (sized for the whole state).
void placeShard(const CheckpointShard& shard, Checkpoint* whole);

}  // namespace chorus::training

/// @file shard_keeper.hpp
/// ShardKeeper: keeps a trainer's last committed state recoverable when ranks die, without a whole copy on every
/// rank. Each rank keeps its own shard (Trainer::exportShard) and a copy of its predecessor's in ring order (its
/// buddy's), exchanged within every step, before the step's commit vote; every `diskEvery` committed steps each rank
/// also writes its shard to disk, for the case of losing a shard and its buddy at once. After a failure the
/// survivors assemble the whole committed state from what they hold, so nothing is read from disk unless two
/// neighbours died together.
#pragma once

#include <string>
#include <vector>

#include "chorus/communicator.hpp"
#include "chorus/training/trainer.hpp"

namespace chorus::training {

struct ShardKeeperConfig {
  long diskEvery = 0;   ///< committed steps between disk checkpoints (0: none)
  std::string diskDir;  ///< where; one file per rank and checkpoint, in a directory every rank reads
};

class ShardKeeper {
 public:
  explicit ShardKeeper(ShardKeeperConfig config = {});

  /// The whole state at the start, gathered on every rank (collective): what recover() returns until the first
  /// commit, and after a recovery until the next.
  Status start(Communicator& comm, Trainer& trainer);
  /// After a step, before its vote (collective): this rank's new shard, and its predecessor's, sent around the ring.
  /// An error here fails the vote; nothing committed changes.
  Status prepare(Communicator& comm, Trainer& trainer);
  /// The vote passed on every rank: the prepared shards become the committed ones, and go to disk on every
  /// `diskEvery`th step. Local.
  Status commit(int rank, int nranks);
  /// After a failure, on the survivors' communicator (collective): `members` are their ranks in the communicator the
  /// shards were kept on. Assembles the committed state from the survivors' shards and buddy copies, or, where a
  /// shard and its buddy are both lost, from the newest disk checkpoint every rank of its time wrote. Its `step` is
  /// the committed step it holds: earlier than the last commit when it came from disk. Then it is this keeper's
  /// committed state, as after start().
  Status recover(Communicator& survivors, const std::vector<int>& members, Checkpoint* state);

  /// Where the last recover() found the state: "memory" or the disk checkpoint's directory and step.
  const std::string& recoveredFrom() const { return recoveredFrom_; }

 private:
  /// From the survivors' shards, and the buddy copy of this rank's predecessor where it died.
  Status assembleFromMemory(Communicator& survivors, bool previousAlive, Checkpoint* state);
  Status assembleFromDisk(Communicator& survivors, Checkpoint* state);

  ShardKeeperConfig config_;
  size_t params_ = 0, stateVectors_ = 0;
  bool whole_ = true;  // the committed state is `start_` (every rank has it), not shards
  Checkpoint start_;
  int keptRank_ = 0, keptRanks_ = 1;  // the communicator the committed shards were kept on
  CheckpointShard own_, buddy_;       // committed: this rank's, and its predecessor's
  CheckpointShard nextOwn_, nextBuddy_;
  long lastDiskStep_ = -1;
  std::string recoveredFrom_;
};

}  // namespace chorus::training

// The shard keeper gives the survivors the last committed state bitwise: from their shards and the buddy copy of a
// lost rank, or from disk when a shard died with its copy; a prepared but uncommitted step changes nothing; a lost
// shard without disk checkpoints is an error naming it; a corrupt shard file is refused.
#include "chorus/training/shard_keeper.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "training/checkpoint_shard.hpp"
#include "training/fixtures.hpp"
#include "training/ranks.hpp"

namespace chorus::testing {
namespace {

using training::Checkpoint;
using training::ShardKeeper;
using training::Trainer;

constexpr int kRanks = 4;

Status trainStep(Trainer& t, int rank, int step) {
  const auto widths = primeMlpWidths();
  Batch b = makeBatch(step, rank, 6, widths.front(), static_cast<int>(widths.back()));
  training::LossResult loss;
  CHORUS_TRY(t.forwardBackward(b.x, b.labels, &loss));
  return t.step();
}

// Trains `committed` steps through the keeper, keeping the gathered state after step `keep` in *kept; then one
// more step is prepared but not committed. Then the ranks in `dead` leave and the others recover.
struct Trial {
  int stage = 2;
  int committed = 3;
  int keep = 3;
  std::vector<int> dead = {2};
  training::ShardKeeperConfig config;
};

std::string runTrial(Communicator& comm, const Trial& trial, Checkpoint* kept, Checkpoint* recovered,
                     std::string* recoveredFrom, Status* recoverStatus) {
  comm.setDeterministic(true);
  training::Sequential model = training::makeMlp(primeMlpWidths());
  auto trainer = makeTestTrainer(comm, model, trial.stage);
  ShardKeeper keeper(trial.config);
  Status st = trainer->init(kInitSeed);
  if (st.isOk()) st = keeper.start(comm, *trainer);
  for (int s = 0; st.isOk() && s <= trial.committed; ++s) {
    st = trainStep(*trainer, comm.rank(), s);
    if (st.isOk()) st = keeper.prepare(comm, *trainer);
    if (st.isOk() && s < trial.committed) st = keeper.commit(comm.rank(), comm.size());
    if (st.isOk() && s + 1 == trial.keep) st = trainer->exportCheckpoint(kept);
  }
  if (!st.isOk()) return st.message();
  const bool dead = std::count(trial.dead.begin(), trial.dead.end(), comm.rank()) > 0;
  std::unique_ptr<Communicator> survivors;
  if (Status s = comm.split(dead ? -1 : 0, 0, &survivors); !s.isOk()) return "split: " + s.message();
  if (dead) return "";
  std::vector<int> members;
  for (int r = 0; r < comm.size(); ++r)
    if (!std::count(trial.dead.begin(), trial.dead.end(), r)) members.push_back(r);
  *recoverStatus = keeper.recover(*survivors, members, recovered);
  *recoveredFrom = keeper.recoveredFrom();
  return "";
}

class ShardKeeperStages : public ::testing::TestWithParam<int> {};

TEST_P(ShardKeeperStages, ALostRankIsRebuiltFromItsBuddyBitwise) {
  Trial trial;
  trial.stage = GetParam();
  std::string failures = onRanks(kRanks, RankKind::kThreads, [&](Communicator& comm) -> std::string {
    Checkpoint kept, recovered;
    std::string from;
    Status st;
    if (std::string e = runTrial(comm, trial, &kept, &recovered, &from, &st); !e.empty()) return e;
    if (comm.rank() == 2) return "";
    if (!st.isOk()) return "recover: " + st.message();
    if (from != "memory") return "recovered from " + from;
    return sameCheckpoint(recovered, kept);  // the committed step, not the prepared one after it
  });
  EXPECT_EQ(failures, "");
}

INSTANTIATE_TEST_SUITE_P(Trainers, ShardKeeperStages, ::testing::Values(0, 1, 2, 3),
                         [](const auto& info) { return info.param == 0 ? "dp" : "zero" + std::to_string(info.param); });

TEST(ShardKeeper, AShardLostWithItsBuddyComesFromDisk) {
  Trial trial;
  trial.committed = 3;
  trial.keep = 2;  // disk checkpoints at steps 2 (and 4, never committed)
  trial.dead = {1, 2};
  trial.config.diskEvery = 2;
  trial.config.diskDir = ::testing::TempDir() + "shards_" + std::to_string(getpid());
  std::string failures = onRanks(kRanks, RankKind::kThreads, [&](Communicator& comm) -> std::string {
    Checkpoint kept, recovered;
    std::string from;
    Status st;
    if (std::string e = runTrial(comm, trial, &kept, &recovered, &from, &st); !e.empty()) return e;
    if (comm.rank() == 1 || comm.rank() == 2) return "";
    if (!st.isOk()) return "recover: " + st.message();
    if (from != trial.config.diskDir + " at step 2") return "recovered from " + from;
    return sameCheckpoint(recovered, kept);
  });
  EXPECT_EQ(failures, "");
  std::filesystem::remove_all(trial.config.diskDir);
}

TEST(ShardKeeper, AShardLostWithItsBuddyAndNoDiskIsAnError) {
  Trial trial;
  trial.dead = {2, 3};
  std::string failures = onRanks(kRanks, RankKind::kThreads, [&](Communicator& comm) -> std::string {
    Checkpoint kept, recovered;
    std::string from;
    Status st;
    if (std::string e = runTrial(comm, trial, &kept, &recovered, &from, &st); !e.empty()) return e;
    if (comm.rank() >= 2) return "";
    if (st.isOk()) return "recovered a lost shard";
    return st.message().find("rank(s) 2 died with") != std::string::npos ? "" : st.message();
  });
  EXPECT_EQ(failures, "");
}

TEST(ShardKeeper, BeforeTheFirstCommitTheStartingStateIsRecovered) {
  Trial trial;
  trial.committed = 0;
  trial.keep = 0;
  std::string failures = onRanks(kRanks, RankKind::kThreads, [&](Communicator& comm) -> std::string {
    comm.setDeterministic(true);
    Checkpoint start, recovered;
    training::Sequential model = training::makeMlp(primeMlpWidths());
    auto trainer = makeTestTrainer(comm, model, 3);
    Status st = trainer->init(kInitSeed);
    if (st.isOk()) st = trainer->exportCheckpoint(&start);
    if (!st.isOk()) return st.message();
    std::string from;
    if (std::string e = runTrial(comm, trial, &start, &recovered, &from, &st); !e.empty()) return e;
    if (comm.rank() == 2) return "";
    if (!st.isOk()) return "recover: " + st.message();
    return sameCheckpoint(recovered, start);
  });
  EXPECT_EQ(failures, "");
}

TEST(CheckpointShard, EncodingRoundTripsAndDamageIsRefused) {
  training::CheckpointShard shard;
  shard.ranges = {{3, 2}, {10, 1}};
  shard.params = {1, 2, 3};
  shard.state = {{4, 5, 6}, {-0.0f, 8, 9}};
  shard.step = 41;
  const std::string bytes = training::encodeShard(shard, {1, 4, 12});
  training::CheckpointShard back;
  training::ShardOrigin origin;
  ASSERT_TRUE(training::decodeShard(bytes, &back, &origin).isOk());
  EXPECT_EQ(back.ranges, shard.ranges);
  EXPECT_EQ(sameBits(back.state[1], shard.state[1]), "");
  EXPECT_EQ(back.step, 41);
  EXPECT_EQ(origin.rank, 1);
  EXPECT_EQ(origin.nranks, 4);
  EXPECT_EQ(origin.params, 12u);
  for (size_t cut : {size_t{0}, size_t{7}, size_t{40}, bytes.size() - 1})
    EXPECT_FALSE(training::decodeShard(bytes.substr(0, cut), &back, &origin).isOk()) << "cut at " << cut;
  EXPECT_FALSE(training::decodeShard(bytes + "x", &back, &origin).isOk());
  std::string outside = bytes;
  const uint64_t far = 12;  // the range {10, 1} moved to {12, 1}: past the 12 parameters' end
  memcpy(&outside[8 + 7 * 8 + 2 * 8], &far, sizeof far);
  Status st = training::decodeShard(outside, &back, &origin);
  EXPECT_NE(st.message().find("outside the state"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace chorus::testing

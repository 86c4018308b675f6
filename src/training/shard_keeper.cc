#include "chorus/training/shard_keeper.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "checkpoint_shard.hpp"

namespace chorus::training {
namespace {

namespace fs = std::filesystem;

std::string shardFileName(long step, int rank, int nranks) {
  return "shard-" + std::to_string(step) + "-" + std::to_string(rank) + "-of-" + std::to_string(nranks);
}

bool parseShardFileName(const std::string& name, long* step, int* rank, int* nranks) {
  return sscanf(name.c_str(), "shard-%ld-%d-of-%d", step, rank, nranks) == 3 &&
         name == shardFileName(*step, *rank, *nranks);
}

// Sends `mine` to the next rank in ring order and receives the previous rank's, sizes first.
Status ringExchange(Communicator& comm, const std::string& mine, std::string* fromPrevious) {
  const int n = comm.size(), next = (comm.rank() + 1) % n, previous = (comm.rank() + n - 1) % n;
  int64_t mySize = static_cast<int64_t>(mine.size()), theirSize = 0;
  auto exchange = [&](const void* out, size_t outBytes, void* in, size_t inBytes) {
    CHORUS_TRY(groupStart());
    Status sent = comm.send(out, outBytes, DataType::kUint8, next);
    Status received = comm.recv(in, inBytes, DataType::kUint8, previous);
    Status ended = groupEnd();
    return !sent.isOk() ? sent : !received.isOk() ? received : ended;
  };
  CHORUS_TRY(exchange(&mySize, sizeof mySize, &theirSize, sizeof theirSize));
  if (theirSize < 0 || theirSize > (int64_t{1} << 40))
    return invalidArgument("shard keeper: rank " + std::to_string(previous) + " announced a shard of " +
                           std::to_string(theirSize) + " bytes");
  fromPrevious->assign(static_cast<size_t>(theirSize), '\0');
  return exchange(mine.data(), mine.size(), fromPrevious->data(), fromPrevious->size());
}

Status writeFileAtomically(const fs::path& path, const std::string& bytes) {
  const fs::path partial = path.string() + ".partial";
  {
    std::ofstream out(partial, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.flush();
    if (!out) return systemError("shard keeper: cannot write " + partial.string() + ": " + strerror(errno));
  }
  std::error_code ec;
  fs::rename(partial, path, ec);
  if (ec) return systemError("shard keeper: cannot rename " + partial.string() + ": " + ec.message());
  return Status::ok();
}

Status readFile(const fs::path& path, std::string* bytes) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream all;
  all << in.rdbuf();
  if (!in) return systemError("shard keeper: cannot read " + path.string());
  *bytes = all.str();
  return Status::ok();
}

Checkpoint emptyState(size_t params, size_t stateVectors, long step) {
  Checkpoint c;
  c.params.assign(params, 0.0f);
  c.state.assign(stateVectors, std::vector<float>(params, 0.0f));
  c.step = step;
  return c;
}

}  // namespace

ShardKeeper::ShardKeeper(ShardKeeperConfig config) : config_(std::move(config)) {}

Status ShardKeeper::start(Communicator& comm, Trainer& trainer) {
  if (config_.diskEvery < 0 || (config_.diskEvery > 0 && config_.diskDir.empty()))
    return invalidArgument("shard keeper: diskEvery must be >= 0, and needs diskDir");
  if (config_.diskEvery > 0) {
    std::error_code ec;
    fs::create_directories(config_.diskDir, ec);
    if (ec) return systemError("shard keeper: cannot create " + config_.diskDir + ": " + ec.message());
  }
  CHORUS_TRY(trainer.exportCheckpoint(&start_));
  params_ = start_.params.size();
  stateVectors_ = start_.state.size();
  whole_ = true;
  keptRank_ = comm.rank();
  keptRanks_ = comm.size();
  return Status::ok();
}

Status ShardKeeper::prepare(Communicator& comm, Trainer& trainer) {
  CHORUS_TRY(trainer.exportShard(&nextOwn_));
  if (comm.size() == 1) return Status::ok();
  std::string theirs;
  CHORUS_TRY(ringExchange(comm, encodeShard(nextOwn_, {comm.rank(), comm.size(), params_}), &theirs));
  ShardOrigin origin;
  CHORUS_TRY(decodeShard(theirs, &nextBuddy_, &origin).withContext("shard keeper: the previous rank's shard"));
  if (origin.nranks != comm.size() || origin.rank != (comm.rank() + comm.size() - 1) % comm.size() ||
      origin.params != params_ || nextBuddy_.step != nextOwn_.step)
    return invalidArgument("shard keeper: the previous rank sent a shard of another step or layout");
  return Status::ok();
}

Status ShardKeeper::commit(int rank, int nranks) {
  std::swap(own_, nextOwn_);
  std::swap(buddy_, nextBuddy_);
  whole_ = false;
  start_ = Checkpoint{};  // its memory goes; the shards hold the state now
  keptRank_ = rank;
  keptRanks_ = nranks;
  if (config_.diskEvery == 0 || own_.step % config_.diskEvery != 0) return Status::ok();
  const fs::path dir(config_.diskDir);
  CHORUS_TRY(
      writeFileAtomically(dir / shardFileName(own_.step, rank, nranks), encodeShard(own_, {rank, nranks, params_})));
  // Every rank wrote the previous set before this step's vote passed, so older sets (of any layout) can go; this
  // one may still be incomplete. Rank 0 removes them.
  if (rank == 0 && lastDiskStep_ >= 0) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      long step = 0;
      int r = 0, n = 0;
      if (parseShardFileName(entry.path().filename().string(), &step, &r, &n) && step < lastDiskStep_)
        fs::remove(entry.path(), ec);
    }
  }
  lastDiskStep_ = own_.step;
  return Status::ok();
}

Status ShardKeeper::recover(Communicator& survivors, const std::vector<int>& members, Checkpoint* state) {
  if (whole_) {
    *state = start_;
    recoveredFrom_ = "memory";
  } else {
    const int n = keptRanks_;
    auto alive = [&](int q) { return std::binary_search(members.begin(), members.end(), q); };
    std::string lost;  // ranks whose shard died with its buddy's copy (the next rank's)
    for (int q = 0; q < n; ++q)
      if (!alive(q) && (n == 1 || !alive((q + 1) % n))) lost.append(" ").append(std::to_string(q));
    if (lost.empty()) {
      CHORUS_TRY(assembleFromMemory(survivors, alive((keptRank_ + n - 1) % n), state));
    } else if (config_.diskEvery > 0) {
      CHORUS_TRY(assembleFromDisk(survivors, state));
    } else {
      return remoteError("shard keeper: the committed shards of rank(s)" + lost +
                         " died with their buddies' copies (the next ranks'), and there are no disk checkpoints "
                         "(diskEvery 0)");
    }
  }
  start_ = *state;
  whole_ = true;
  keptRank_ = survivors.rank();
  keptRanks_ = survivors.size();
  return Status::ok();
}

Status ShardKeeper::assembleFromMemory(Communicator& survivors, bool previousAlive, Checkpoint* state) {
  // Each element comes from exactly one survivor and the others add 0: an integer sum of the bit patterns gives
  // that survivor's bits, whatever they are (a float sum would turn -0 into +0).
  *state = emptyState(params_, stateVectors_, own_.step);
  placeShard(own_, state);
  if (!previousAlive) placeShard(buddy_, state);
  CHORUS_TRY(survivors.allReduce(state->params.data(), state->params.data(), params_, DataType::kInt32, RedOp::sum()));
  for (auto& v : state->state)
    CHORUS_TRY(survivors.allReduce(v.data(), v.data(), params_, DataType::kInt32, RedOp::sum()));
  recoveredFrom_ = "memory";
  return Status::ok();
}

Status ShardKeeper::assembleFromDisk(Communicator& survivors, Checkpoint* state) {
  // The newest step whose set every rank of its time wrote; the survivors take the oldest of their choices, so
  // all read the same set.
  std::map<std::pair<long, int>, int> written;  // (step, rank count) -> files
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(config_.diskDir, ec)) {
    const std::string name = entry.path().filename().string();
    long step = 0;
    int r = 0, n = 0;
    if (parseShardFileName(name, &step, &r, &n)) ++written[{step, n}];
  }
  int64_t chosen[2] = {-1, 0};  // step, rank count
  for (const auto& [key, files] : written)
    if (files == key.second) chosen[0] = key.first, chosen[1] = key.second;
  int64_t agreed[2] = {chosen[0], -chosen[0]};
  CHORUS_TRY(survivors.allReduce(agreed, agreed, 2, DataType::kInt64, RedOp::min()));
  if (agreed[0] < 0 || agreed[0] != -agreed[1])
    return remoteError("shard keeper: shards and their buddies are lost, and " + config_.diskDir +
                       " holds no complete disk checkpoint that every survivor sees");
  *state = emptyState(params_, stateVectors_, chosen[0]);
  for (int r = 0; r < chosen[1]; ++r) {
    const fs::path path = fs::path(config_.diskDir) / shardFileName(chosen[0], r, static_cast<int>(chosen[1]));
    std::string bytes;
    CHORUS_TRY(readFile(path, &bytes));
    CheckpointShard shard;
    ShardOrigin origin;
    CHORUS_TRY(decodeShard(bytes, &shard, &origin).withContext(path.string()));
    if (origin.params != params_ || shard.state.size() != stateVectors_)
      return invalidArgument(path.string() + ": a shard of another model");
    placeShard(shard, state);
  }
  recoveredFrom_ = config_.diskDir + " at step " + std::to_string(chosen[0]);
  return Status::ok();
}

}  // namespace chorus::training

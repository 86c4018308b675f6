#include "chorus/training/param_server/param_server.hpp"

#include <set>

#include "../agreement.hpp"
#include "server.hpp"

namespace chorus::training::param_server {

Status parseSync(const std::string& name, Sync* out) {
  if (name == "bsp")
    *out = Sync::kBsp;
  else if (name == "asp")
    *out = Sync::kAsp;
  else if (name == "ssp")
    *out = Sync::kSsp;
  else
    return invalidArgument("parameter server sync '" + name + "' is not bsp, asp or ssp");
  return Status::ok();
}

const char* syncName(Sync sync) { return sync == Sync::kBsp ? "bsp" : sync == Sync::kAsp ? "asp" : "ssp"; }

namespace {

Status checkConfig(const Communicator& comm, const ParamServerConfig& c) {
  if (c.servers < 1 || c.servers >= comm.size())
    return invalidArgument("a parameter server of " + std::to_string(comm.size()) + " ranks needs 1 to " +
                           std::to_string(comm.size() - 1) + " servers (at least one worker), not " +
                           std::to_string(c.servers));
  if (c.replicate && c.servers < 2) return invalidArgument("parameter server replication needs at least 2 servers");
  if (c.staleness < 0) return invalidArgument("parameter server staleness bound must be at least 0");
  if (c.chunkBytes < sizeof(float)) return invalidArgument("parameter server chunks must hold at least one float");
  if (!(c.timeoutSeconds > 0)) return invalidArgument("parameter server timeout must be positive");
  return Status::ok();
}

}  // namespace

Status join(Communicator& comm, Sequential& model, const ParamServerConfig& config, std::unique_ptr<Server>* server,
            std::unique_ptr<Worker>* worker) {
  server->reset();
  worker->reset();
  CHORUS_TRY(checkConfig(comm, config));
  KeyLayout layout;
  layout.servers = config.servers;
  layout.workers = comm.size() - config.servers;
  layout.params = model.paramCount();
  layout.chunkElements = config.chunkBytes / sizeof(float);
  Fingerprint mine;
  mine.mix(config.servers).mix(static_cast<uint64_t>(config.sync)).mix(config.staleness).mix(config.replicate);
  mine.mix(config.chunkBytes).mix(config.seed).mix(layout.params).mix(config.optimizer.kind);
  CHORUS_TRY(checkSameOnEveryRank(comm, mine.value(),
                                  "parameter server (servers, sync, staleness, replication, chunk size, seed, "
                                  "optimizer or model size)"));
  // Every worker with every server; each server with its backup, twice: forwards one way, acks the other.
  std::set<std::pair<int, int>> workerPairs, chainPairs;
  for (int w = 0; w < layout.workers; ++w)
    for (int s = 0; s < layout.servers; ++s) workerPairs.insert({w, layout.serverRank(s)});
  if (config.replicate)
    for (int s = 0; s < layout.servers; ++s)
      chainPairs.insert({layout.serverRank(s), layout.serverRank(layout.backupOf(s))});
  ServerLinks links;
  CHORUS_TRY(openPairLinks(comm, workerPairs, "parameter server links", &links.workers));
  CHORUS_TRY(openPairLinks(comm, chainPairs, "parameter server replication links", &links.chain));
  CHORUS_TRY(openPairLinks(comm, chainPairs, "parameter server replication links", &links.acks));
  if (comm.rank() < layout.workers) {
    *worker = makeWorker(comm, model, layout, config, std::move(links.workers));
  } else {
    std::vector<float> initial(layout.params);
    model.initParams(initial.data(), config.seed);
    *server = makeServer(comm, layout, config, std::move(links), initial.data());
  }
  return Status::ok();
}

}  // namespace chorus::training::param_server

// How a communicator comes to know its peers and its system: the connections to every rank, the hosts' topologies
// joined into one graph, the cost table every rank shares, and what the dispatcher is set up with.
#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

#include "comm/comm_impl.hpp"
#include "comm/one_sided.hpp"
#include "core/deadline.hpp"
#include "core/settings.hpp"
#include "engine/settings.hpp"
#include "topology/graph_xml.hpp"
#include "topology/local_host.hpp"
#include "topology/system.hpp"
#include "transports/peer_mesh.hpp"
#include "tuner/algo_override.hpp"
#include "tuner/costs.hpp"
#include "tuner/settings.hpp"

namespace chorus {

namespace {

// CHORUS_TUNING_FILE over `costs`, when set.
Status loadTuningFile(const Settings& settings, tuner::CostTable* costs) {
  const std::string& path = settings[tuner::kTuningFile];
  if (path.empty()) return Status::ok();
  std::ifstream in(path);
  if (!in) return invalidArgument("CHORUS_TUNING_FILE " + path + " cannot be opened");
  std::ostringstream text;
  text << in.rdbuf();
  Status st = tuner::parseTuning(text.str(), costs);
  return st.isOk() ? st : st.withContext("CHORUS_TUNING_FILE " + path);
}

}  // namespace

Status CommImpl::connectPeers() {
  transport::PeerMesh mesh;
  CHORUS_TRY(transport::connectPeerMesh(*bootstrap_, rank_, nranks_, settings_, &mesh));
  peers_ = std::move(mesh.peers);
  connections_ = std::move(mesh.connections);
  if (config_.oneSidedContexts > 0) {
    CHORUS_TRY(OneSided::connect(*bootstrap_, rank_, nranks_, settings_, config_.oneSidedContexts, &timeoutSeconds_,
                                 &aborted_, &oneSided_));
  }

  CHORUS_TRY(buildSystem());
  return bootstrap_->barrier("ready");
}

Status CommImpl::buildSystem() {
  // Hosts in the order of their first rank; that rank sends its host's graph, the others send nothing.
  std::map<std::string, int> hostIndex;
  hostOfRank_.assign(nranks_, 0);
  for (int r = 0; r < nranks_; ++r) {
    hostOfRank_[r] = hostIndex.emplace(peers_[r].hostId, static_cast<int>(hostIndex.size())).first->second;
  }
  const bool sender =
      std::find(hostOfRank_.begin(), hostOfRank_.end(), hostOfRank_[rank_]) - hostOfRank_.begin() == rank_;
  std::string mine;
  if (sender) {
    const topology::SystemGraph* local = nullptr;
    CHORUS_TRY(topology::localHost(&local));
    mine = topology::exportGraphXml(*local);
  }
  std::vector<std::string> blobs;
  CHORUS_TRY(bootstrap_->allGather("topology", mine, &blobs));
  std::vector<topology::SystemGraph> hosts(hostIndex.size());
  for (int r = 0; r < nranks_; ++r) {
    if (blobs[r].empty()) continue;
    Status st = topology::importGraphXml(blobs[r], &hosts[hostOfRank_[r]]);
    if (!st.isOk()) return st.withContext("topology of rank " + std::to_string(r) + "'s host");
  }
  system_ = topology::joinHosts(hosts);
  // The selector needs the same inputs on every rank: rank 0's cost table (its tuning file over the defaults for
  // this system) goes to all; a host with more ranks than cores makes every dependent round dearer.
  std::string table;
  if (rank_ == 0) {
    tuner::CostTable costs = tuner::defaultCosts(system_);
    Status st = loadTuningFile(settings_, &costs);
    table = st.isOk() ? tuner::formatTuning(costs) : "error " + st.message();
  }
  CHORUS_TRY(bootstrap_->allGather("tuning", table, &blobs));
  if (blobs[0].rfind("error ", 0) == 0) return invalidArgument(blobs[0].substr(6) + " (on rank 0)");
  tuner::CostTable costs = tuner::defaultCosts(system_);
  CHORUS_TRY(tuner::parseTuning(blobs[0], &costs));
  // Cores belong to machines, and to the ranks on them only as far as their CPU sets reach (machineLoad); hosts
  // simulated on one machine (CHORUS_HOST_ID) share its cores.
  machineLoad_ = transport::machineLoad(peers_, rank_);
  const Settings& cfg = settings_;
  Dispatcher::Setup setup;
  setup.hostLayout = std::make_shared<const std::vector<int>>(hostOfRank_);
  setup.waitSpins = {cfg[engine::kSpin], machineLoad_.ranksShareCores()};
  setup.residency = engine::CacheResidency(engine::lastLevelCacheShare(machineLoad_.ranks));
  setup.coldStreamingFrom = static_cast<size_t>(cfg[engine::kColdStreaming]);
  setup.cachedStreamingFrom = static_cast<size_t>(cfg[engine::kCachedStreaming]);
  tuner::Selector& selector = setup.selector;
  selector.costs = tuner::costInputs(costs, transport::anyMachineSharesCores(peers_));
  selector.measured = tuner::measuredRules(costs, nranks_, static_cast<int>(hosts.size()));
  selector.deterministic = cfg[tuner::kDeterministic];
  Status st = config_.algorithm.empty() ? tuner::rulesFromSettings(cfg, &selector.rules)
                                        : tuner::parseAlgoRules(config_.algorithm, &selector.rules);
  if (!st.isOk())
    return config_.algorithm.empty() ? st : st.withContext("CommConfig.algorithm '" + config_.algorithm + "'");
  dispatcher_.setUp(std::move(setup));
  return Status::ok();
}

}  // namespace chorus

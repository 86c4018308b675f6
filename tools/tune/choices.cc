#include "tools/tune/choices.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <tuple>

#include "algorithms/plan.hpp"
#include "chorus/unique_id.hpp"
#include "core/settings.hpp"
#include "tuner/choice.hpp"
#include "tuner/settings.hpp"

namespace chorus::tools {
namespace {

using Clock = std::chrono::steady_clock;

// A measured choice replaces the selector's only where it is this much faster: launches of one plan on an
// oversubscribed host spread by about as much (perf/archive/2026-11-28-the-launch-to-launch-spread-measured.md, "The
// launch-to-launch spread, measured").
constexpr double kMargin = 0.10;

const algo::CollType kCollectives[] = {algo::CollType::kAllReduce, algo::CollType::kReduceScatter,
                                       algo::CollType::kAllGather, algo::CollType::kAlltoAll,
                                       algo::CollType::kBroadcast};

// `coll` of `bytes` as the perf tools count them (the whole gathered or scattered buffer), float32.
algo::CollShape shapeOf(algo::CollType coll, size_t bytes, int rank, int nranks,
                        const std::shared_ptr<const std::vector<int>>& hostOfRank) {
  algo::CollShape shape = tuner::shapeOfOperation(coll, bytes, nranks, sizeof(float));
  shape.rank = rank;
  shape.hostOfRank = hostOfRank;
  return shape;
}

Status call(Communicator& c, const algo::CollShape& s, const float* send, float* recv) {
  switch (s.type) {
    case algo::CollType::kAllReduce:
      return c.allReduce(send, recv, s.count, DataType::kFloat32, RedOp::sum());
    case algo::CollType::kReduceScatter:
      return c.reduceScatter(send, recv, s.count, DataType::kFloat32, RedOp::sum());
    case algo::CollType::kAllGather:
      return c.allGather(send, recv, s.count, DataType::kFloat32);
    case algo::CollType::kAlltoAll:
      return c.alltoAll(send, recv, s.count, DataType::kFloat32);
    default:
      return c.broadcast(send, recv, s.count, DataType::kFloat32, 0);
  }
}

// Time of one call (µs): two warm calls, then a count every rank derives from the size alone (so all agree),
// closed by a barrier: a root's Broadcast returns once its bytes are sent, the call ends when the last rank has them.
Status timeCall(Communicator& c, const algo::CollShape& s, const float* send, float* recv, double* us) {
  const size_t bytes = tuner::operationBytes(s);
  const int iters = std::clamp(static_cast<int>((16u << 20) / std::max<size_t>(bytes, 1)), 3, 40);
  for (int i = 0; i < 2; ++i) CHORUS_TRY(call(c, s, send, recv));
  CHORUS_TRY(c.barrier());
  const auto start = Clock::now();
  for (int i = 0; i < iters; ++i) CHORUS_TRY(call(c, s, send, recv));
  CHORUS_TRY(c.barrier());
  *us = std::chrono::duration<double, std::micro>(Clock::now() - start).count() / iters;
  return Status::ok();
}

// A communicator of `comm`'s ranks whose selector always takes `algorithm` where it can run the call.
Status forcedCommunicator(Communicator& comm, const std::string& algorithm, std::unique_ptr<Communicator>* out) {
  UniqueId id;
  Status made = comm.rank() == 0 ? UniqueId::create(&id) : Status::ok();
  // Sent even when it failed: the others then fail to join instead of waiting for an id that never comes.
  CHORUS_TRY(comm.broadcast(id.bytes.data(), id.bytes.data(), id.bytes.size(), DataType::kInt8, 0));
  CHORUS_TRY(made);
  CommConfig config;
  config.algorithm = algorithm;
  return Communicator::create(id, comm.size(), comm.rank(), out, config);
}

std::string ruleName(algo::CollType coll) {
  std::string name = algo::collName(coll);
  for (char& ch : name) ch = static_cast<char>(tolower(static_cast<unsigned char>(ch)));
  return name;
}

}  // namespace

Status measureChoices(Communicator& comm, std::shared_ptr<const std::vector<int>> hostOfRank, const ChoiceSweep& sweep,
                      std::string* rules, std::string* report) {
  const int n = comm.size(), me = comm.rank();
  std::vector<size_t> sizes;
  for (size_t bytes = sweep.minBytes; bytes <= sweep.maxBytes; bytes *= 4) sizes.push_back(bytes);
  tuner::Selector selector;
  selector.deterministic = settings()[tuner::kDeterministic];  // its choices must be ones deterministic mode may run
  // The algorithms that can run some measured call, by name: one forced communicator each.
  std::map<std::string, std::vector<const algo::Algorithm*>> byName;
  for (const algo::Algorithm& a : algo::algorithms()) {
    if (std::find(std::begin(kCollectives), std::end(kCollectives), a.coll) == std::end(kCollectives)) continue;
    for (size_t bytes : sizes) {
      const algo::CollShape shape = shapeOf(a.coll, bytes, me, n, hostOfRank);
      if (shape.count > 0 && tuner::allowed(a, shape, selector)) {
        byName[a.name].push_back(&a);
        break;
      }
    }
  }
  // Page-aligned, as the perf tools' buffers (and large tensors) are.
  const size_t pages = (sweep.maxBytes + 4095) / 4096 * 4096;
  std::unique_ptr<float, decltype(&free)> send(static_cast<float*>(aligned_alloc(4096, pages)), &free),
      recv(static_cast<float*>(aligned_alloc(4096, pages)), &free);
  if (!send || !recv) return systemError("cannot allocate 2 x " + std::to_string(pages) + " bytes");
  std::fill_n(send.get(), pages / sizeof(float), 1.0f);
  std::fill_n(recv.get(), pages / sizeof(float), 0.0f);
  // The selector as it stands (the empty name: nothing forced) is measured beside every algorithm.
  byName[""];
  std::map<std::tuple<algo::CollType, size_t, std::string>, std::vector<double>> times;
  for (int rep = 0; rep < sweep.repeats; ++rep) {
    for (const auto& [name, candidates] : byName) {
      std::unique_ptr<Communicator> forced;
      CHORUS_TRY(forcedCommunicator(comm, name, &forced));
      for (algo::CollType coll : kCollectives) {
        const algo::Algorithm* a = nullptr;
        for (const algo::Algorithm* c : candidates) a = c->coll == coll ? c : a;
        if (!name.empty() && !a) continue;
        for (size_t bytes : sizes) {
          const algo::CollShape shape = shapeOf(coll, bytes, me, n, hostOfRank);
          if (shape.count == 0 || (a && !tuner::allowed(*a, shape, selector))) continue;
          double us = 0;
          Status st = timeCall(*forced, shape, send.get(), recv.get(), &us);
          if (!st.isOk()) return st.withContext(std::string(algo::collName(coll)) + " forced to '" + name + "'");
          times[{coll, bytes, name}].push_back(us);
        }
      }
    }
  }
  if (me != 0) return Status::ok();

  // Per size the fastest algorithm, where its median beats the selector's own by kMargin; each choice holds from
  // halfway (geometrically) below its size to halfway above, and sizes without one keep the selector's choice.
  rules->clear();
  report->clear();
  char line[256];
  for (algo::CollType coll : kCollectives) {
    snprintf(line, sizeof(line), "%s (median us of %d interleaved repeats; selector: nothing forced)\n",
             algo::collName(coll), sweep.repeats);
    *report += line;
    std::vector<std::string> chosen(sizes.size());
    for (size_t i = 0; i < sizes.size(); ++i) {
      std::string best;
      double bestUs = 0, selectorUs = 0;
      snprintf(line, sizeof(line), "  %10zu", sizes[i]);
      *report += line;
      for (auto& [key, samples] : times) {
        if (std::get<0>(key) != coll || std::get<1>(key) != sizes[i]) continue;
        std::sort(samples.begin(), samples.end());
        const double median = samples[samples.size() / 2];
        const std::string& name = std::get<2>(key);
        snprintf(line, sizeof(line), "  %s %.1f", name.empty() ? "selector" : name.c_str(), median);
        *report += line;
        if (name.empty()) {
          selectorUs = median;
        } else if (best.empty() || median < bestUs) {
          best = name, bestUs = median;
        }
      }
      if (!best.empty() && bestUs < selectorUs * (1 - kMargin)) chosen[i] = best;
      *report += best.empty() ? "\n" : "  -> " + (chosen[i].empty() ? "selector" : chosen[i]) + "\n";
    }
    for (size_t i = 0; i < sizes.size();) {
      size_t end = i + 1;
      while (end < sizes.size() && chosen[end] == chosen[i]) ++end;
      if (!chosen[i].empty()) {
        const std::string lo = i == 0 ? "0" : std::to_string(sizes[i - 1] * 2);
        const std::string hi = end == sizes.size() ? "" : std::to_string(sizes[end - 1] * 2);
        *rules += ruleName(coll) + ":" + chosen[i] + "@" + lo + "-" + hi + ",";
      }
      i = end;
    }
  }
  if (!rules->empty()) rules->pop_back();
  return Status::ok();
}

}  // namespace chorus::tools

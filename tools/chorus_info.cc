// chorus-info: every setting with its current value and documentation, the transports and whether they can run
// here, the algorithm catalogue, and the selector's choice table (algorithm and predicted time per collective and
// size) for a rank count and topology.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "algorithms/plan.hpp"
#include "bootstrap/host_id.hpp"
#include "core/settings.hpp"
#include "gpu/settings.hpp"
#include "nccl.h"
#include "tools/version_flag.hpp"
#include "topology/hwloc_import.hpp"
#include "topology/system.hpp"
#include "transports/registry.hpp"
#include "tuner/choice.hpp"
#include "tuner/costs.hpp"
#include "tuner/settings.hpp"

using namespace chorus;

namespace {

void usage() {
  printf(
      "usage: chorus-info [--ranks N] [--hosts H] [--topo FILE] [--tuning FILE] [--all] [--csv SIZES]\n"
      "                   [--settings-markdown] [--version]\n"
      "Prints chorus's version, every setting with its value from the environment, the transports, the\n"
      "algorithms, and the selector's choice per collective and size for a communicator of N ranks on this\n"
      "host's topology.\n"
      "  --ranks N      ranks of the communicator for the choice table (default 2)\n"
      "  --hosts H      spread them over H hosts alike to this one (default 1)\n"
      "  --topo FILE    the host's topology from FILE instead of hwloc discovery\n"
      "  --tuning FILE  the alpha/beta table of chorus-tune (default: CHORUS_TUNING_FILE)\n"
      "  --all          print every applicable algorithm's predicted time, not only the choice\n"
      "  --csv SIZES    only the table, as collective,bytes,algorithm,predicted_us,chosen lines for the comma\n"
      "                 separated sizes (bytes as the perf tools count them; K, M, G suffixes)\n"
      "  --settings-markdown  only the settings, as the Markdown table of the docs' settings page\n"
      "examples: chorus-info --ranks 8 --hosts 2 --all;  chorus-info --csv 8,1K,1M,64M\n");
}

std::string sizeText(size_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  int u = 0;
  while (bytes >= 1024 && bytes % 1024 == 0 && u < 3) {
    bytes /= 1024;
    ++u;
  }
  return std::to_string(bytes) + " " + units[u];
}

void printSettings() {
  printf("chorus %s (NCCL API %s)\n\n", chorus::version(), chorus::ncclApiVersion());
  if (std::string bad = settingsError(); !bad.empty()) printf("INVALID SETTING: %s\n\n", bad.c_str());
  printf(
      "Settings (environment; the NCCL name is honoured too where given; [c]: CommConfig::settings may set it per "
      "communicator):\n");
  for (const auto& s : settingDocs()) {
    const std::string value = rawSettingValue(s);
    std::string names = s.name;
    if (*s.alias) names += " (" + std::string(s.alias) + ")";
    printf("  %-40s = %-10s default %-8s %s%s\n", names.c_str(), value.c_str(), *s.defaultValue ? s.defaultValue : "-",
           s.scope == SettingScope::kCommunicator ? "[c] " : "", s.doc);
  }
  printf(
      "\nTransports (most preferred first: each peer gets the first that reaches it; CHORUS_TRANSPORT forces one):\n");
  for (const transport::TransportKind* kind : transport::transportKinds()) {
    const std::string why = kind->unavailable();
    const char* state = !why.empty() ? "unavailable:" : kind->offeredUnforced() ? "available" : "when forced";
    printf("  %-10s %-13s %s\n", kind->name.c_str(), state, why.empty() ? kind->description.c_str() : why.c_str());
  }
  printf("\nAlgorithms (collective: name):\n");
  for (const auto& a : algo::algorithms()) {
    const char* note = a.memory == algo::Memory::kPeer ? " (device memory, ranks of one host)"
                       : a.applies                     ? " (needs the same number of ranks on 2+ hosts)"
                                                       : "";
    printf("  %-14s %-14s%s\n", algo::collName(a.coll), a.name, note);
  }
}

// The docs' settings page is this table, so the registry is the one place a setting is documented.
void printSettingsMarkdown() {
  auto cell = [](const char* text) {
    std::string out;
    for (const char* c = text; *c; ++c) {
      if (*c == '|') out.push_back('\\');
      out.push_back(*c);
    }
    return out;
  };
  auto code = [](const char* text) {
    std::string quoted;
    if (*text) quoted.append(1, '`').append(text).append(1, '`');
    return quoted;
  };
  printf("| variable | NCCL name | default | meaning | per communicator |\n|---|---|---|---|---|\n");
  for (const auto& s : settingDocs())
    printf("| %s | %s | %s | %s | %s |\n", code(s.name).c_str(), code(s.alias).c_str(), cell(s.defaultValue).c_str(),
           cell(s.doc).c_str(), s.scope == SettingScope::kCommunicator ? "yes" : "");
}

}  // namespace

int main(int argc, char** argv) {
  if (chorus::tools::printVersionIfAsked(argc, argv, "chorus-info")) return 0;
  int ranks = 2, hosts = 1;
  bool all = false;
  std::vector<size_t> csvSizes;
  std::string topo, tuning = settings()[tuner::kTuningFile];
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        fprintf(stderr, "chorus-info: %s needs a value\n", arg.c_str());
        exit(2);
      }
      return argv[++i];
    };
    if (arg == "--ranks" || arg == "--hosts") {
      const std::string v = value();
      char* end = nullptr;
      const long n = strtol(v.c_str(), &end, 10);
      if (*end != '\0' || n < 1 || n > 4096) {
        fprintf(stderr, "chorus-info: %s needs a positive integer, not '%s'\n", arg.c_str(), v.c_str());
        return 2;
      }
      (arg == "--ranks" ? ranks : hosts) = static_cast<int>(n);
    } else if (arg == "--topo") {
      topo = value();
    } else if (arg == "--tuning") {
      tuning = value();
    } else if (arg == "--all") {
      all = true;
    } else if (arg == "--csv") {
      std::stringstream list(value());
      std::string item;
      while (std::getline(list, item, ',')) {
        int64_t bytes = 0;
        if (!parseByteSize(item.c_str(), &bytes)) {
          fprintf(stderr, "chorus-info: --csv needs sizes such as 8,64K,1M,1G, not '%s'\n", item.c_str());
          return 2;
        }
        csvSizes.push_back(static_cast<size_t>(bytes));
      }
    } else if (arg == "--settings-markdown") {
      printSettingsMarkdown();
      return 0;
    } else if (arg == "-h" || arg == "--help") {
      usage();
      return 0;
    } else {
      fprintf(stderr, "chorus-info: unknown argument '%s'\n", arg.c_str());
      usage();
      return 2;
    }
  }
  if (ranks % hosts != 0) {
    fprintf(stderr, "chorus-info: %d ranks do not split evenly over %d hosts\n", ranks, hosts);
    return 2;
  }

  const bool csv = !csvSizes.empty();
  if (!csv) {
    int version = 0;
    ncclGetVersion(&version);
    printf("chorus: NCCL-compatible C API %d (libnccl.so.2), host memory collectives\n\n", version);
    printSettings();
  }

  topology::SystemGraph host;
  Status st = topo.empty() ? topology::discoverLocalHost(bootstrap::hostId(), &host)
                           : topology::loadTopologyFile(topo, "host", &host);
  tuner::Selector selector;
  tuner::CostTable costs;
  if (st.isOk()) {
    const topology::SystemGraph system = hosts > 1 ? topology::replicateHost(host, hosts) : host;
    costs = tuner::defaultCosts(system);
    if (!tuning.empty()) {
      std::ifstream in(tuning);
      std::ostringstream text;
      text << in.rdbuf();
      st = in ? tuner::parseTuning(text.str(), &costs) : invalidArgument("cannot open " + tuning);
    }
    const std::vector<int> perHost(hosts, ranks / hosts);
    selector.costs = tuner::costInputs(costs, topology::oversubscribed(system, perHost));
    selector.measured = tuner::measuredRules(costs, ranks, hosts);
  }
  if (st.isOk()) st = tuner::rulesFromSettings(settings(), &selector.rules);
  if (!st.isOk()) {
    fprintf(stderr, "chorus-info: %s\n", st.message().c_str());
    return 1;
  }

  auto layout = std::make_shared<std::vector<int>>(ranks);
  for (int r = 0; r < ranks; ++r) (*layout)[r] = r / (ranks / hosts);
  auto shapeOf = [&](algo::CollType coll, size_t bytes) {
    algo::CollShape shape = tuner::shapeOfOperation(coll, bytes, ranks, 4);
    shape.hostOfRank = hosts > 1 ? layout : nullptr;
    return shape;
  };
  const algo::CollType kTable[] = {algo::CollType::kAllReduce, algo::CollType::kReduceScatter,
                                   algo::CollType::kAllGather, algo::CollType::kAlltoAll,
                                   algo::CollType::kBroadcast, algo::CollType::kReduce};
  if (csv) {
    for (algo::CollType coll : kTable) {
      for (size_t bytes : csvSizes) {
        const algo::CollShape shape = shapeOf(coll, bytes);
        const algo::Algorithm* chosen = tuner::choose(shape, selector);
        for (const algo::Algorithm& a : algo::algorithms()) {
          if (a.coll != coll || a.memory != shape.memory || !a.appliesTo(shape)) continue;
          printf("%s,%zu,%s,%.3f,%d\n", algo::collName(coll), bytes, a.name, tuner::predict(a, shape, selector.costs),
                 &a == chosen);
        }
      }
    }
    return 0;
  }
  printf("\nChoice table for %d ranks on %d host%s (%s), float32; sizes as the perf tools count them.\n", ranks, hosts,
         hosts > 1 ? "s" : "", selector.costs.roundPenalty > 0 ? "more ranks than cores" : "a core per rank");
  printf(
      "Costs: intra-host alpha %.3g us beta %.3g GB/s, inter-host alpha %.3g us beta %.3g GB/s, reduce %.3g GB/s%s\n",
      costs.intra.alpha, costs.intra.beta, costs.inter.alpha, costs.inter.beta, costs.reduceGBps,
      tuning.empty() ? " (defaults)" : (" (" + tuning + ")").c_str());
  if (const auto it = costs.choices.find(tuner::choicesKey(ranks, hosts)); it != costs.choices.end())
    printf("Measured choices (taken over the model's where they match): %s\n", it->second.c_str());
  // The choice and its predicted time per size; with --all, every other algorithm's that can run the shape.
  auto printTable = [&](const std::vector<algo::CollType>& colls, auto shapeAt) {
    for (algo::CollType coll : colls) {
      printf("\n  %s\n", algo::collName(coll));
      for (size_t bytes = 8; bytes <= (64u << 20); bytes *= 8) {
        const algo::CollShape shape = shapeAt(coll, bytes);
        const algo::Algorithm* chosen = tuner::choose(shape, selector);
        if (!chosen) continue;
        printf("    %-9s %-13s %10.1f us", sizeText(bytes).c_str(), chosen->name,
               tuner::predict(*chosen, shape, selector.costs));
        if (all) {
          for (const algo::Algorithm& a : algo::algorithms()) {
            if (&a != chosen && a.cost && tuner::allowed(a, shape, selector))
              printf("   %s %.1f", a.name, tuner::predict(a, shape, selector.costs));
          }
        }
        printf("\n");
      }
    }
  };
  printTable({std::begin(kTable), std::end(kTable)}, shapeOf);
  if (hosts > 1) return 0;
  // Device buffers of ranks of one host run over each other's memory (algorithms/peer_plan.hpp).
  const size_t slot = static_cast<size_t>(settings()[gpu::kSlot]);
  const size_t oneShot = static_cast<size_t>(settings()[gpu::kOneShot]);
  printf(
      "\nOn device memory (the GPUs of one host, over each other's memory): slots of %s, one-shot AllReduce up "
      "to %s; a barrier %.3g us, %.3g GB/s moved\n",
      sizeText(slot).c_str(), sizeText(oneShot).c_str(), selector.costs.peer.alpha, selector.costs.peer.beta);
  printTable({algo::CollType::kAllReduce, algo::CollType::kReduceScatter, algo::CollType::kAllGather,
              algo::CollType::kAlltoAll, algo::CollType::kBroadcast, algo::CollType::kReduce, algo::CollType::kGather,
              algo::CollType::kScatter},
             [&](algo::CollType coll, size_t bytes) {
               algo::CollShape shape = tuner::shapeOfOperation(coll, bytes, ranks, 4);
               shape.memory = algo::Memory::kPeer;
               shape.peer = {slot, oneShot};
               return shape;
             });
  return 0;
}

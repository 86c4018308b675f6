#include "tools/train/options.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iterator>
#include <memory>
#include <type_traits>
#include <utility>

#include "chorus/training/compress/codec.hpp"
#include "chorus/training/param_server/param_server.hpp"
#include "chorus/training/pipeline/schedule.hpp"

namespace chorus::train_demo {
namespace {

// --kill-rank R[,R...]: distinct ranks, at least one left alive.
std::string killRanks(const char* v, Options* o) {
  o->killRanks.clear();
  for (const char* at = v;;) {
    char* end = nullptr;
    const long rank = strtol(at, &end, 10);
    if (end == at || rank < 0 || (*end != ',' && *end != '\0') ||
        std::count(o->killRanks.begin(), o->killRanks.end(), rank))
      return "--kill-rank needs distinct ranks R[,R...], not '" + std::string(v) + "'";
    o->killRanks.push_back(static_cast<int>(rank));
    if (*end == '\0') return "";
    at = end + 1;
  }
}

// --slow-rank RANK:FACTOR.
std::string slowRank(const char* v, Options* o) {
  char* end = nullptr;
  const long rank = strtol(v, &end, 10);
  if (end == v || *end != ':' || rank < 0) return "--slow-rank needs RANK:FACTOR, not '" + std::string(v) + "'";
  const char* factor = end + 1;
  o->slowRank = static_cast<int>(rank);
  o->slowFactor = strtod(factor, &end);
  if (end == factor || *end != '\0' || !(o->slowFactor >= 1))
    return "--slow-rank's factor must be a number of at least 1, not '" + std::string(factor) + "'";
  return "";
}

}  // namespace

void usage() {
  fprintf(
      stderr,
      "usage: chorus-train [--mode single|dp|zero1|zero2|zero3|tp|moe|pp|ps|compress|bf16] [--ranks N] [--epochs E]\n"
      "                    [--samples N] [--batch GLOBAL] [--lr LR] [--seed S] [--data DIR] [--csv FILE]\n"
      "                    [--schedule S] [--micro-batches M] [--slow-rank R:F] [--balance on|off]\n"
      "                    [--sync bsp|asp|ssp] [--servers S] [--staleness s] [--replicate on|off]\n"
      "                    [--kill-rank R[,R...] --at-step S [--disk-every N --disk-dir DIR]]\n"
      "Trains an MLP on Fashion-MNIST with chorus's training layer, one thread per rank; prints a line per\n"
      "epoch and, with --csv, the loss and accuracy of every step.\n"
      "  --mode M      single (one rank, the reference), dp (data parallel), zero1/zero2/zero3 (ZeRO stage),\n"
      "                tp (tensor parallel over N ranks), moe (mixture of experts over N ranks), pp (pipeline\n"
      "                of N stages; its gradients are summed over the micro-batches), ps (parameter server)\n"
      "                (default dp)\n"
      "  --ranks N     ranks (default 4)\n"
      "  --epochs E    epochs (default 2)\n"
      "  --samples N   training images per epoch, 0 = all 60000 (default 0)\n"
      "  --batch B     global batch size, split over the ranks (default 64)\n"
      "  --lr LR       Adam's learning rate (default 0.001)\n"
      "  --seed S      initial weights and shuffling (default 1)\n"
      "  --data DIR    the dataset's idx files (default /usr/share/datasets/fashion-mnist)\n"
      "  --csv FILE    append mode,step,loss,accuracy,payload,wire lines to FILE\n"
      "  --schedule S  pp: gpipe, 1f1b, interleaved-1f1b (2 stages per rank) or zb-h1 (default 1f1b)\n"
      "  --micro-batches M  pp: micro-batches per step (default 8)\n"
      "  --slow-rank R:F    dp, ps: rank R (a worker) runs slower for real: its thread gets 1/F of a core by a\n"
      "                CPU quota (cgroup v1 cpu controller), or where none can be set it spins for F-1 times\n"
      "                its compute after each batch (a measured busy-wait); it says which\n"
      "  --balance on|off   dp: split each global batch by measured throughput (default off)\n"
      "  --codec C     compress: data parallelism with buckets sent as bf16, fp16, topk:<fraction> or\n"
      "                powersgd:<rank>[:<start step>]; with zero1..3: how gradients reach their shards\n"
      "  --sync M      ps: bsp (synchronous), asp (asynchronous) or ssp (bounded staleness) (default bsp)\n"
      "  --servers S   ps: the last S of the N ranks serve, the others work; the batch splits over the\n"
      "                workers (default 1)\n"
      "  --staleness s ps: ssp's bound (default 2)\n"
      "  --replicate on|off  ps: each server's range kept on the next server too (default off)\n"
      "  --kill-rank R[,R...] --at-step S  dp, zero1..3: ranks R stop at global step S as crashed ranks would\n"
      "                (their communicators aborted); each step commits only if every rank agrees it succeeded;\n"
      "                each rank keeps its committed shard and a copy of the previous rank's, and the survivors\n"
      "                shrink, rebuild their trainer from those and go on\n"
      "  --disk-every N --disk-dir DIR  with --kill-rank: every N committed steps each rank writes its shard to\n"
      "                DIR too, for when a shard and its copy die together (default: never)\n"
      "  (--mode bf16: data parallelism computing on bf16 copies of fp32 master weights)\n"
      "  --version     print chorus's version\n"
      "examples: chorus-train --mode single --epochs 1;  chorus-train --mode zero3 --ranks 4 --csv zero3.csv;\n"
      "          chorus-train --mode ps --ranks 5 --sync ssp --servers 1\n");
}

// Reads the command line into *o; returns why it cannot ("" when it can).
std::string parse(int argc, char** argv, Options* o) {
  auto integer = [](const std::string& flag, const char* v, auto* out) -> std::string {
    char* end = nullptr;
    const long long x = strtoll(v, &end, 10);
    if (end == v || *end != '\0' || x < 0) return flag + " needs a non-negative integer, not '" + v + "'";
    *out = static_cast<std::remove_reference_t<decltype(*out)>>(x);
    return "";
  };
  auto positive = [](const std::string& flag, const char* v, float* out) -> std::string {
    char* end = nullptr;
    const float x = strtof(v, &end);
    if (end == v || *end != '\0' || !(x > 0)) return flag + " needs a positive number, not '" + v + "'";
    *out = x;
    return "";
  };
  auto onOff = [](const std::string& flag, const char* v, bool* out) -> std::string {
    if (strcmp(v, "on") != 0 && strcmp(v, "off") != 0) return flag + " takes on or off, not '" + v + "'";
    *out = strcmp(v, "on") == 0;
    return "";
  };
  // Every flag once, with what reads its value.
  auto text = [](std::string* out) {
    return [out](const std::string&, const char* v) { return (*out = v, std::string()); };
  };
  auto whole = [&](auto* out) {
    return [&integer, out](const std::string& f, const char* v) { return integer(f, v, out); };
  };
  auto onOrOff = [&](bool* out) {
    return [&onOff, out](const std::string& f, const char* v) { return onOff(f, v, out); };
  };
  const std::pair<const char*, std::function<std::string(const std::string&, const char*)>> kFlags[] = {
      {"--mode", text(&o->mode)},
      {"--ranks", whole(&o->ranks)},
      {"--epochs", whole(&o->epochs)},
      {"--samples", whole(&o->trainSamples)},
      {"--batch", whole(&o->batch)},
      {"--lr", [&](const std::string& f, const char* v) { return positive(f, v, &o->lr); }},
      {"--seed", whole(&o->seed)},
      {"--data", text(&o->data)},
      {"--csv", text(&o->csv)},
      {"--schedule", text(&o->schedule)},
      {"--micro-batches", whole(&o->microBatches)},
      {"--slow-rank", [&](const std::string&, const char* v) { return slowRank(v, o); }},
      {"--balance", onOrOff(&o->balance)},
      {"--codec", text(&o->codec)},
      {"--sync", text(&o->sync)},
      {"--servers", whole(&o->servers)},
      {"--staleness", whole(&o->staleness)},
      {"--replicate", onOrOff(&o->replicate)},
      {"--kill-rank", [&](const std::string&, const char* v) { return killRanks(v, o); }},
      {"--at-step", whole(&o->atStep)},
      {"--disk-every", whole(&o->diskEvery)},
      {"--disk-dir", text(&o->diskDir)},
  };
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") return "help";
    const auto flag = std::find_if(std::begin(kFlags), std::end(kFlags), [&](const auto& f) { return a == f.first; });
    if (flag == std::end(kFlags)) return "unknown argument '" + a + "'";
    if (i + 1 >= argc) return a + " needs a value";
    if (std::string bad = flag->second(a, argv[++i]); !bad.empty()) return bad;
  }
  static const char* kModes[] = {"single", "dp", "zero1", "zero2",    "zero3", "tp",
                                 "moe",    "pp", "ps",    "compress", "bf16"};
  if (std::none_of(std::begin(kModes), std::end(kModes), [&](const char* m) { return o->mode == m; })) {
    return "--mode '" + o->mode + "' is not one of single, dp, zero1, zero2, zero3, tp, moe, pp, ps, compress, bf16";
  }
  const bool zero = o->mode.rfind("zero", 0) == 0;
  if ((o->diskEvery > 0 || !o->diskDir.empty()) && (o->killRanks.empty() || o->diskEvery == 0 || o->diskDir.empty()))
    return "--disk-every N and --disk-dir DIR go together, with --kill-rank";
  if (!o->killRanks.empty()) {
    if (o->mode != "dp" && o->mode.rfind("zero", 0) != 0)
      return "--kill-rank goes with --mode dp, zero1, zero2 or zero3";
    const int highest = *std::max_element(o->killRanks.begin(), o->killRanks.end());
    if (highest >= o->ranks || static_cast<int>(o->killRanks.size()) >= o->ranks)
      return "--kill-rank names ranks below --ranks " + std::to_string(o->ranks) + " and leaves at least one alive";
    if (o->slowRank >= 0 || o->balance || !o->codec.empty())
      return "--kill-rank goes without --slow-rank, --balance and --codec";
  }
  if (o->mode == "compress" && o->codec.empty()) return "--mode compress needs --codec";
  if (!o->codec.empty() && o->mode != "compress" && !zero)
    return "--codec goes with --mode compress, zero1, zero2 or zero3";
  if (!o->codec.empty()) {
    std::unique_ptr<training::compress::GradientCodec> codec;
    if (Status st = training::compress::makeCodec(o->codec, &codec); !st.isOk()) return st.message();
  }
  if (o->balance && o->mode != "dp") return "--balance goes with --mode dp";
  if (o->slowRank >= 0 && o->mode != "dp" && o->mode != "ps") return "--slow-rank goes with --mode dp or ps";
  if (o->mode == "ps") {
    training::param_server::Sync sync;
    if (Status st = training::param_server::parseSync(o->sync, &sync); !st.isOk()) return st.message();
    if (o->servers < 1 || o->servers >= o->ranks) return "--servers must be at least 1 and below --ranks";
    if (o->replicate && o->servers < 2) return "--replicate on needs --servers 2 or more";
    const size_t workers = static_cast<size_t>(o->ranks - o->servers);
    if (o->batch % workers != 0)
      return "--batch " + std::to_string(o->batch) + " does not split evenly over " + std::to_string(workers) +
             " workers";
    if (o->slowRank >= static_cast<int>(workers))
      return "--slow-rank names rank " + std::to_string(o->slowRank) + ", not one of the " + std::to_string(workers) +
             " workers";
    if (o->epochs < 1) return "--epochs must be at least 1";
    return "";
  }
  if (o->mode == "pp") {
    if (o->microBatches < 1 || static_cast<size_t>(o->microBatches) > o->batch)
      return "--micro-batches must be between 1 and the batch size";
    const auto names = training::pipeline::scheduleNames();
    if (std::find(names.begin(), names.end(), o->schedule) == names.end()) {
      std::string known;
      for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
      return "unknown pipeline schedule '" + o->schedule + "' (known: " + known + ")";
    }
    return "";  // every rank takes the whole batch
  }
  if (o->mode == "single") o->ranks = 1;
  if (o->slowRank >= o->ranks)
    return "--slow-rank names rank " + std::to_string(o->slowRank) + " of " + std::to_string(o->ranks);
  if (o->ranks < 1 || o->epochs < 1) return "--ranks and --epochs must be at least 1";
  if (o->batch % static_cast<size_t>(o->ranks) != 0) {
    return "--batch " + std::to_string(o->batch) + " does not split evenly over " + std::to_string(o->ranks) + " ranks";
  }
  return "";
}

}  // namespace chorus::train_demo

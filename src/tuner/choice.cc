#include "tuner/choice.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <string>

#include "tuner/settings.hpp"

namespace chorus::tuner {

Status rulesFromSettings(const Settings& s, std::vector<AlgoRule>* rules) {
  if (!s[kAlgo].empty()) return parseAlgoRules(s[kAlgo], rules);
  Status st = parseAlgoRules(fromNcclAlgo(s[kNcclAlgo]), rules);
  return st.isOk() ? st : st.withContext("NCCL_ALGO='" + s[kNcclAlgo] + "'");
}

double predict(const algo::Algorithm& a, const algo::CollShape& shape, const algo::CostInputs& costs) {
  if (!a.cost) return std::numeric_limits<double>::infinity();
  return a.cost(shape, algo::CostModel(shape, costs));
}

namespace {

// Between algorithms the model predicts within 2% of each other (at 2 ranks ring, recursive doubling and
// Rabenseifner move the same bytes in the same rounds), the one with fewer, larger steps per rank wins: the
// engine pays a little per step, which the model leaves out.
constexpr double kTie = 1.02;
int preference(const char* name) {
  static const char* kOrder[] = {"ring",        "direct",   "pairwise",     "one_shot", "rec_doubling",
                                 "rec_halving", "binomial", "rabenseifner", "hier"};
  for (int i = 0; i < static_cast<int>(std::size(kOrder)); ++i) {
    if (std::string(kOrder[i]) == name) return i;
  }
  return static_cast<int>(std::size(kOrder));
}

bool reduces(algo::CollType t) {
  return t == algo::CollType::kAllReduce || t == algo::CollType::kReduceScatter || t == algo::CollType::kReduce;
}

}  // namespace

bool allowed(const algo::Algorithm& a, const algo::CollShape& shape, const Selector& selector) {
  if (a.coll != shape.type || a.memory != shape.memory || !a.appliesTo(shape)) return false;
  return !selector.deterministic || !reduces(shape.type) || a.rankOrder;
}

namespace {

// The fastest of `candidates` by the model; preference, then name, decide among the near-fastest: never the
// registration order, which could differ.
const algo::Algorithm* fastest(const std::vector<std::pair<double, const algo::Algorithm*>>& candidates) {
  if (candidates.empty()) return nullptr;
  double quickest = std::numeric_limits<double>::infinity();
  for (const auto& [t, a] : candidates) quickest = std::min(quickest, t);
  const algo::Algorithm* best = nullptr;
  for (const auto& [t, a] : candidates) {
    if (!(t <= quickest * kTie) && std::isfinite(quickest)) continue;
    if (!best || preference(a->name) < preference(best->name) ||
        (preference(a->name) == preference(best->name) && std::string(a->name) < best->name)) {
      best = a;
    }
  }
  return best;
}

}  // namespace

std::string runnableNames(const algo::CollShape& shape, const Selector& selector) {
  std::string names;
  for (const algo::Algorithm& a : algo::algorithms()) {
    if (allowed(a, shape, selector)) names += (names.empty() ? "" : ", ") + std::string(a.name);
  }
  return names;
}

const algo::Algorithm* choose(const algo::CollShape& shape, const Selector& selector, const CallSelection* selection) {
  const std::vector<algo::Algorithm>& all = algo::algorithms();
  if (selection) {
    std::vector<std::pair<double, const algo::Algorithm*>> selected;
    for (const algo::Algorithm& a : all) {
      if (allowed(a, shape, selector) && selection->has(a))
        selected.emplace_back(predict(a, shape, selector.costs), &a);
    }
    if (!selected.empty() || selection->required()) return fastest(selected);
  }
  auto excluded = [&](const algo::Algorithm& a) {
    for (const std::vector<AlgoRule>* rules : {&selector.rules, &selector.measured}) {
      for (const AlgoRule& rule : *rules) {
        if (rule.exclude && rule.matches(shape, a)) return true;
      }
    }
    return false;
  };
  // The first forcing rule of `rules` that matches an algorithm able to run the shape, in the order written.
  auto forcedBy = [&](const std::vector<AlgoRule>& rules, bool honourExclusions) -> const algo::Algorithm* {
    for (const AlgoRule& rule : rules) {
      if (rule.exclude) continue;
      for (const algo::Algorithm& a : all) {
        if (allowed(a, shape, selector) && rule.matches(shape, a) && !(honourExclusions && excluded(a))) return &a;
      }
    }
    return nullptr;
  };
  // CHORUS_ALGO's forcing rules win; then the choice measured for this launch shape, unless a rule excludes it.
  if (const algo::Algorithm* a = forcedBy(selector.rules, false)) return a;
  if (const algo::Algorithm* a = forcedBy(selector.measured, true)) return a;
  std::vector<std::pair<double, const algo::Algorithm*>> candidates;
  for (const algo::Algorithm& a : all) {
    if (allowed(a, shape, selector) && !excluded(a)) candidates.emplace_back(predict(a, shape, selector.costs), &a);
  }
  return fastest(candidates);
}

}  // namespace chorus::tuner

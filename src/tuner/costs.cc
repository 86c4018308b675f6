#include "tuner/costs.hpp"

#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "topology/link_model.hpp"

namespace chorus::tuner {

CostTable defaultCosts(const topology::SystemGraph& system) {
  CostTable t;
  double slowest = 0, latency = topology::link_model::kNetworkLatency;
  for (const topology::Link& l : system.links()) {
    if (l.kind != topology::LinkKind::kNetwork) continue;
    if (slowest == 0 || l.bandwidth < slowest) slowest = l.bandwidth;
    latency = l.latency;
  }
  if (slowest > 0) t.inter = {latency, slowest};
  return t;
}

namespace {

const std::string kChoices = "choices.";

// "choices.<ranks>x<hosts> <rules>": the launch shape must read as two positive numbers, the rules as CHORUS_ALGO's.
Status parseChoices(const std::string& shape, const std::string& rules, const std::string& where, CostTable* table) {
  int nranks = 0, hosts = 0;
  // Written back exactly: no sign, leading zero or trailing text.
  if (sscanf(shape.c_str(), "%dx%d", &nranks, &hosts) != 2 || nranks < 1 || hosts < 1 ||
      choicesKey(nranks, hosts) != shape) {
    return invalidArgument(where + ": the launch shape must read <ranks>x<hosts>, e.g. choices.8x1");
  }
  std::vector<AlgoRule> parsed;
  Status st = parseAlgoRules(rules, &parsed);
  if (!st.isOk()) return st.withContext(where);
  table->choices[shape] = rules;
  return Status::ok();
}

}  // namespace

std::string choicesKey(int nranks, int hosts) { return std::to_string(nranks) + "x" + std::to_string(hosts); }

std::vector<AlgoRule> measuredRules(const CostTable& table, int nranks, int hosts) {
  std::vector<AlgoRule> rules;
  const auto it = table.choices.find(choicesKey(nranks, hosts));
  // Checked when the file was read: a table holds only rules that parse.
  if (it != table.choices.end() && !parseAlgoRules(it->second, &rules).isOk()) rules.clear();
  return rules;
}

Status parseTuning(const std::string& text, CostTable* table) {
  std::istringstream in(text);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (const size_t hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream fields(line);
    std::string key, value, extra;
    if (!(fields >> key)) continue;
    const std::string where = "tuning file line " + std::to_string(number) + " ('" + key + "')";
    if (!(fields >> value) || (fields >> extra)) return invalidArgument(where + ": expected 'key value'");
    if (key.rfind(kChoices, 0) == 0) {
      CHORUS_TRY(parseChoices(key.substr(kChoices.size()), value, where, table));
      continue;
    }
    char* end = nullptr;
    const double v = strtod(value.c_str(), &end);
    if (*end != '\0' || !(v >= 0)) return invalidArgument(where + ": '" + value + "' is not a non-negative number");
    if (key == "intra.alpha_us") {
      table->intra.alpha = v;
    } else if (key == "intra.beta_GBps" && v > 0) {
      table->intra.beta = v;
    } else if (key == "inter.alpha_us") {
      table->inter.alpha = v;
    } else if (key == "inter.beta_GBps" && v > 0) {
      table->inter.beta = v;
    } else if (key == "peer.alpha_us") {
      table->peer.alpha = v;
    } else if (key == "peer.beta_GBps" && v > 0) {
      table->peer.beta = v;
    } else if (key == "reduce_GBps" && v > 0) {
      table->reduceGBps = v;
    } else if (key == "oversubscribed_round_us") {
      table->oversubscribedRound = v;
    } else if (key == "oversubscribed_message_us") {
      table->oversubscribedMessage = v;
    } else if (key == "oversubscribed_pairs_factor" && v >= 1) {
      table->oversubscribedPairs = v;
    } else {
      return invalidArgument(where + ": unknown key, a bandwidth of 0, or a factor under 1");
    }
  }
  return Status::ok();
}

std::string formatTuning(const CostTable& t) {
  char text[512];
  snprintf(text, sizeof(text),
           "intra.alpha_us %.4g\nintra.beta_GBps %.4g\ninter.alpha_us %.4g\ninter.beta_GBps %.4g\n"
           "peer.alpha_us %.4g\npeer.beta_GBps %.4g\nreduce_GBps %.4g\noversubscribed_round_us "
           "%.4g\noversubscribed_message_us %.4g\n"
           "oversubscribed_pairs_factor %.4g\n",
           t.intra.alpha, t.intra.beta, t.inter.alpha, t.inter.beta, t.peer.alpha, t.peer.beta, t.reduceGBps,
           t.oversubscribedRound, t.oversubscribedMessage, t.oversubscribedPairs);
  std::string out = text;
  for (const auto& [shape, rules] : t.choices) out += kChoices + shape + " " + rules + "\n";
  return out;
}

algo::CostInputs costInputs(const CostTable& t, bool oversubscribed) {
  algo::CostInputs in;
  in.intra = t.intra;
  in.inter = t.inter;
  in.peer = t.peer;
  in.reduceGBps = t.reduceGBps;
  in.roundPenalty = oversubscribed ? t.oversubscribedRound : 0;
  in.pairsFactor = oversubscribed ? t.oversubscribedPairs : 1;
  in.messagePenalty = oversubscribed ? t.oversubscribedMessage : 0;
  return in;
}

}  // namespace chorus::tuner

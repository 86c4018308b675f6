// The selector: CHORUS_ALGO's grammar and NCCL_ALGO's translation, tuning files, and the cost model's choices on
// shapes whose answer is known (one round for tiny messages, hierarchical across slow links, ties to the ring).
#include <gtest/gtest.h>

#include <memory>

#include "algorithms/cost.hpp"
#include "tuner/algo_override.hpp"
#include "tuner/choice.hpp"
#include "tuner/costs.hpp"

namespace chorus::tuner {
namespace {

using algo::CollType;

algo::CollShape shapeOf(CollType type, int nranks, size_t bytes, int hosts = 1) {
  algo::CollShape s;
  s.type = type;
  s.nranks = nranks;
  s.elemSize = 4;
  const bool perPeer = type == CollType::kAllGather || type == CollType::kReduceScatter || type == CollType::kAlltoAll;
  s.count = bytes / 4 / (perPeer ? static_cast<size_t>(nranks) : 1);
  if (hosts > 1) {
    auto layout = std::make_shared<std::vector<int>>(nranks);
    for (int r = 0; r < nranks; ++r) (*layout)[r] = r / (nranks / hosts);
    s.hostOfRank = layout;
  }
  return s;
}

Selector selectorWith(const std::string& rules, const CostTable& table = {}, bool oversubscribed = false) {
  Selector s;
  s.costs = costInputs(table, oversubscribed);
  EXPECT_TRUE(parseAlgoRules(rules, &s.rules).isOk()) << rules;
  return s;
}

std::string chosen(const algo::CollShape& shape, const Selector& selector) {
  const algo::Algorithm* a = choose(shape, selector);
  return a ? a->name : "none";
}

TEST(AlgoRules, ParsesEveryForm) {
  std::vector<AlgoRule> rules;
  ASSERT_TRUE(parseAlgoRules(" ring , allreduce:rec_doubling@0-64K; ^one_shot, AllGather:direct@1M-", &rules).isOk());
  ASSERT_EQ(rules.size(), 4u);
  EXPECT_TRUE(rules[0].anyCollective);
  EXPECT_EQ(rules[1].coll, CollType::kAllReduce);
  EXPECT_EQ(rules[1].hi, size_t{64} << 10);
  EXPECT_TRUE(rules[2].exclude);
  EXPECT_EQ(rules[3].coll, CollType::kAllGather);
  EXPECT_EQ(rules[3].lo, size_t{1} << 20);
  EXPECT_EQ(rules[3].hi, SIZE_MAX);
}

TEST(AlgoRules, ErrorsNameTheEntry) {
  std::vector<AlgoRule> rules;
  Status st = parseAlgoRules("ring,allreduce:bogus", &rules);
  ASSERT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("'allreduce:bogus'"), std::string::npos) << st.message();
  st = parseAlgoRules("allreduce:ring@64K", &rules);
  ASSERT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("lo-hi"), std::string::npos) << st.message();
  st = parseAlgoRules("allsum:ring", &rules);
  ASSERT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("unknown collective 'allsum'"), std::string::npos) << st.message();
  st = parseAlgoRules("broadcast:direct", &rules);  // exists, but not for Broadcast
  ASSERT_FALSE(st.isOk());
}

TEST(AlgoRules, TranslatesNcclAlgo) {
  EXPECT_EQ(fromNcclAlgo("Ring"), "ring");
  EXPECT_EQ(fromNcclAlgo("^Ring"), "^ring");
  EXPECT_EQ(fromNcclAlgo("Tree"), "tree,rec_doubling,rec_halving,binomial");
  EXPECT_EQ(fromNcclAlgo("allreduce:tree;broadcast:ring"), "allreduce:tree,broadcast:ring");
  EXPECT_EQ(fromNcclAlgo("NVLS,CollnetDirect"), "");
  std::vector<AlgoRule> rules;
  EXPECT_TRUE(parseAlgoRules(fromNcclAlgo("Ring,Tree"), &rules).isOk());
}

TEST(Selector, RulesForceAndExcludeBySize) {
  const Selector s = selectorWith("allreduce:rec_doubling@0-64K,allreduce:ring");
  EXPECT_EQ(chosen(shapeOf(CollType::kAllReduce, 4, 1024), s), "rec_doubling");
  EXPECT_EQ(chosen(shapeOf(CollType::kAllReduce, 4, 64 << 10), s), "ring");
  EXPECT_EQ(chosen(shapeOf(CollType::kAllGather, 4, 1024), s), chosen(shapeOf(CollType::kAllGather, 4, 1024),
                                                                      selectorWith("")));  // other collectives free
  const Selector noOneShot = selectorWith("^one_shot");
  EXPECT_NE(chosen(shapeOf(CollType::kAllReduce, 4, 8), noOneShot), "one_shot");
  // A forced algorithm that cannot run the shape is passed over: hier needs several hosts.
  EXPECT_NE(chosen(shapeOf(CollType::kAllReduce, 4, 8 << 20), selectorWith("hier")), "hier");
  EXPECT_EQ(chosen(shapeOf(CollType::kAllReduce, 4, 8 << 20, 2), selectorWith("hier")), "hier");
}

TEST(Selector, CostModelPicksTheKnownAnswers) {
  const Selector free = selectorWith("");
  // Tiny messages: one round beats the ring's 2(n-1).
  EXPECT_EQ(chosen(shapeOf(CollType::kAllReduce, 8, 8), free), "one_shot");
  // Large messages on one host: the bandwidth-optimal ones tie with the ring, which wins the tie.
  EXPECT_EQ(chosen(shapeOf(CollType::kAllReduce, 2, 64 << 20), free), "ring");
  // Two hosts behind a slow link: the hierarchical AllReduce sends 1/L of the data per rank across it.
  CostTable slow;
  slow.inter = {20.0, 0.125};
  const Selector cluster = selectorWith("", slow);
  const algo::CollShape big = shapeOf(CollType::kAllReduce, 4, 4 << 20, 2);
  EXPECT_EQ(chosen(big, cluster), "hier");
  const double ring = predict(*algo::findAlgorithm(CollType::kAllReduce, "ring"), big, cluster.costs);
  const double hier = predict(*algo::findAlgorithm(CollType::kAllReduce, "hier"), big, cluster.costs);
  EXPECT_GT(ring / hier, 1.4);
  // More ranks than cores: each dependent round costs a switch, so fewer rounds win for longer.
  CostTable table;
  table.oversubscribedRound = 20;
  const Selector busy = selectorWith("", table, true);
  EXPECT_NE(chosen(shapeOf(CollType::kAllGather, 8, 64 << 10), busy), "ring");
  // ... but where every rank sends to every other, all copy at once though only some run: from a few hundred KiB
  // the direct algorithms lose to ones whose ranks take turns, and not without ranks outnumbering cores.
  // (Staged transfers, read in place, are not charged so: see the next test.)
  const Selector oversubscribed = selectorWith("", CostTable{}, true);
  const algo::CollShape reduceScatter = shapeOf(CollType::kReduceScatter, 4, 1 << 20);
  EXPECT_EQ(chosen(shapeOf(CollType::kReduceScatter, 4, 16 << 10), oversubscribed), "direct");
  EXPECT_NE(chosen(reduceScatter, oversubscribed), "direct");
  const algo::Algorithm& direct = *algo::findAlgorithm(CollType::kReduceScatter, "direct");
  EXPECT_GT(predict(direct, reduceScatter, oversubscribed.costs), predict(direct, reduceScatter, free.costs));
}

// More ranks than cores: a rank's messages of one round no longer overlap, each takes time on a core its other
// ranks need. At 4 ranks both the direct AllReduce and recursive doubling take two rounds, and recursive
// doubling's one message a round then wins at 16 KiB (measured on 2 cores:
// perf/archive/2026-12-03-oversubscribed-ranks-each-message-of-a-round-costs-its-core.md); with a core each, nothing
// changes.
TEST(Selector, MessagesOfARoundCostEachWhereRanksShareCores) {
  const algo::CollShape mid = shapeOf(CollType::kAllReduce, 4, 16 << 10);
  CostTable overlapping;
  overlapping.oversubscribedMessage = 0;
  EXPECT_EQ(chosen(mid, selectorWith("", overlapping, true)), "direct");
  EXPECT_EQ(chosen(mid, selectorWith("", CostTable{}, true)), "rec_doubling");
  EXPECT_EQ(chosen(mid, selectorWith("", CostTable{}, false)), chosen(mid, selectorWith("", overlapping, false)));
  // The penalty grows with the messages a rank sends: an all-pairs round of 8 ranks pays 7, one pair's round 1.
  const algo::CollShape eight = shapeOf(CollType::kAllReduce, 8, 8 << 10);
  const algo::Algorithm& direct = *algo::findAlgorithm(CollType::kAllReduce, "direct");
  const algo::Algorithm& doubling = *algo::findAlgorithm(CollType::kAllReduce, "rec_doubling");
  CostTable heavy;
  heavy.oversubscribedMessage = 2;
  const auto extra = [&](const algo::Algorithm& a) {
    return predict(a, eight, costInputs(heavy, true)) - predict(a, eight, costInputs(overlapping, true));
  };
  EXPECT_NEAR(extra(direct), 2 * 7 * 2.0, 1e-9);    // 2 all-pairs rounds of 7 messages
  EXPECT_NEAR(extra(doubling), 3 * 1 * 2.0, 1e-9);  // 3 rounds of one
}

// Direct AllGather stages its transfers: from kStagedDirectFrom per block the peers of a host read each block in
// place, copied in once for all of them, one copy per reader where the FIFOs make two. That wins from three ranks,
// with or without more ranks than cores; at two each block has one reader and the staging copy buys nothing over
// the ring; across a slow link the hierarchical algorithms still win.
TEST(Selector, StagedDirectAlgorithmsWhereBlocksAreReadInPlace) {
  for (bool oversubscribed : {false, true}) {
    const Selector selector = selectorWith("", CostTable{}, oversubscribed);
    for (int n : {4, 8}) {
      for (size_t bytes : {algo::kStagedDirectFrom * static_cast<size_t>(n), size_t{1} << 20, size_t{64} << 20})
        EXPECT_EQ(chosen(shapeOf(CollType::kAllGather, n, bytes), selector), "direct") << n << " " << bytes;
    }
    for (size_t bytes : {size_t{64} << 10, size_t{1} << 20, size_t{64} << 20})
      EXPECT_EQ(chosen(shapeOf(CollType::kAllGather, 2, bytes), selector), "ring") << bytes;
  }
  // Below the threshold the FIFOs carry them, charged as before.
  const Selector busy = selectorWith("", CostTable{}, true);
  const algo::CollShape small = shapeOf(CollType::kAllGather, 4, 64 << 10);
  const algo::Algorithm& direct = *algo::findAlgorithm(CollType::kAllGather, "direct");
  EXPECT_GT(predict(direct, small, busy.costs), predict(direct, small, selectorWith("").costs));
  CostTable slow;
  slow.inter = {20.0, 0.125};
  EXPECT_EQ(chosen(shapeOf(CollType::kAllGather, 4, 4 << 20, 2), selectorWith("", slow)), "hier");
}

TEST(TuningFile, ParsesAndRejects) {
  CostTable t;
  ASSERT_TRUE(parseTuning("# measured\nintra.alpha_us 0.5\ninter.beta_GBps 0.12  # capped\n\n", &t).isOk());
  EXPECT_DOUBLE_EQ(t.intra.alpha, 0.5);
  EXPECT_DOUBLE_EQ(t.inter.beta, 0.12);
  CostTable back;
  ASSERT_TRUE(parseTuning(formatTuning(t), &back).isOk());
  EXPECT_DOUBLE_EQ(back.inter.beta, 0.12);
  Status st = parseTuning("intra.alpha_us 1\nintra.beta_GBps fast\n", &t);
  ASSERT_FALSE(st.isOk());
  EXPECT_NE(st.message().find("line 2"), std::string::npos) << st.message();
  EXPECT_FALSE(parseTuning("warp.speed 9\n", &t).isOk());
  EXPECT_FALSE(parseTuning("inter.beta_GBps 0\n", &t).isOk());
  ASSERT_TRUE(parseTuning("oversubscribed_pairs_factor 2\n", &t).isOk());
  EXPECT_DOUBLE_EQ(t.oversubscribedPairs, 2);
  ASSERT_TRUE(parseTuning(formatTuning(t), &back).isOk());
  EXPECT_DOUBLE_EQ(back.oversubscribedPairs, 2);
  EXPECT_FALSE(parseTuning("oversubscribed_pairs_factor 0.5\n", &t).isOk());
  ASSERT_TRUE(parseTuning("oversubscribed_message_us 0.25\n", &t).isOk());
  ASSERT_TRUE(parseTuning(formatTuning(t), &back).isOk());
  EXPECT_DOUBLE_EQ(back.oversubscribedMessage, 0.25);
  EXPECT_FALSE(parseTuning("oversubscribed_message_us -1\n", &t).isOk());
  ASSERT_TRUE(parseTuning("peer.alpha_us 12\npeer.beta_GBps 450\n", &t).isOk());
  ASSERT_TRUE(parseTuning(formatTuning(t), &back).isOk());
  EXPECT_DOUBLE_EQ(back.peer.alpha, 12);
  EXPECT_DOUBLE_EQ(costInputs(back, false).peer.beta, 450);
  EXPECT_FALSE(parseTuning("peer.beta_GBps 0\n", &t).isOk());
}

TEST(TuningFile, MeasuredChoicesBelongToTheirLaunchShape) {
  CostTable t;
  ASSERT_TRUE(
      parseTuning("choices.8x1 allreduce:direct@256K-,allgather:ring\nchoices.4x2 alltoall:pairwise\n", &t).isOk());
  EXPECT_EQ(measuredRules(t, 8, 1).size(), 2u);
  EXPECT_EQ(measuredRules(t, 4, 2).size(), 1u);
  EXPECT_TRUE(measuredRules(t, 8, 2).empty());
  EXPECT_TRUE(measuredRules(t, 4, 1).empty());
  CostTable back;
  ASSERT_TRUE(parseTuning(formatTuning(t), &back).isOk());
  EXPECT_EQ(back.choices, t.choices);
  // A wrong shape or rule names its line.
  for (const char* bad : {"choices.8 ring\n", "choices.8x0 ring\n", "choices.x1 ring\n", "choices.8x1y ring\n",
                          "choices.08x1 ring\n", "intra.alpha_us 1\nchoices.8x1 allreduce:bogus\n"}) {
    Status st = parseTuning(bad, &t);
    ASSERT_FALSE(st.isOk()) << bad;
    EXPECT_NE(st.message().find("line"), std::string::npos) << st.message();
  }
}

// A measured choice takes the model's place where it matches and can run the shape; CHORUS_ALGO's rules go first,
// and exclude it too; deterministic mode still refuses an algorithm that does not fold in rank order.
TEST(Selector, MeasuredChoicesOverTheModel) {
  const algo::CollShape big = shapeOf(CollType::kAllReduce, 8, 4 << 20);
  const algo::CollShape small = shapeOf(CollType::kAllReduce, 8, 4 << 10);
  Selector s = selectorWith("");
  const std::string modelBig = chosen(big, s), modelSmall = chosen(small, s);
  const std::string other = modelBig == "tree" ? "ring" : "tree";  // never the model's choice
  ASSERT_TRUE(parseAlgoRules("allreduce:hier,allreduce:" + other + "@1M-", &s.measured).isOk());
  EXPECT_EQ(chosen(big, s), other);
  EXPECT_EQ(chosen(small, s), modelSmall);  // outside the measured range: the model
  Selector forced = selectorWith("allreduce:rec_doubling");
  forced.measured = s.measured;
  EXPECT_EQ(chosen(big, forced), "rec_doubling");
  Selector excluded = selectorWith("^" + other);
  excluded.measured = s.measured;
  EXPECT_EQ(chosen(big, excluded), modelBig);
  Selector deterministic = s;
  deterministic.deterministic = true;
  EXPECT_TRUE(algo::findAlgorithm(CollType::kAllReduce, chosen(big, deterministic).c_str())->rankOrder);
}

}  // namespace
}  // namespace chorus::tuner

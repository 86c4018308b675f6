// A call's own algorithm selection (tuner/call_selection.hpp): NCCL's grammar over chorus's and NCCL's names, the
// selector's choice within it, and CollArgs::algorithms over processes, submitted and run.
#include "tuner/call_selection.hpp"

#include <gtest/gtest.h>

#include <string>

#include "algorithms/plan.hpp"
#include "tests/support/process_ranks.hpp"
#include "tuner/choice.hpp"

namespace chorus::tuner {
namespace {

const algo::Algorithm& find(algo::CollType coll, const char* name) {
  const algo::Algorithm* a = algo::findAlgorithm(coll, name);
  EXPECT_NE(a, nullptr) << name;
  return *a;
}

// The names `text` allows among `coll`'s host algorithms, comma-separated in catalogue order.
std::string allowedNames(const std::string& text, algo::CollType coll) {
  CallSelection s;
  Status st = CallSelection::parse(text, true, &s);
  if (!st.isOk()) return "error: " + st.message();
  std::string names;
  for (const algo::Algorithm& a : algo::algorithms()) {
    if (a.coll == coll && a.memory == algo::Memory::kHost && s.has(a))
      names += (names.empty() ? "" : ",") + std::string(a.name);
  }
  return names;
}

bool allows(const std::string& text, algo::CollType coll, const char* name) {
  const std::string names = "," + allowedNames(text, coll) + ",";
  return names.find("," + std::string(name) + ",") != std::string::npos;
}

TEST(CallSelection, NamesArePrefixesOfChorussOrNcclsNamesInAnyCase) {
  using algo::CollType;
  EXPECT_EQ(allowedNames("ring", CollType::kBroadcast), "ring");
  EXPECT_TRUE(allows("REC", CollType::kAllReduce, "rec_doubling"));
  EXPECT_FALSE(allows("REC", CollType::kAllReduce, "ring"));
  EXPECT_TRUE(allows("Ring_Simple", CollType::kAllGather, "ring"));
  // NCCL's TREE is each collective's log-depth algorithm.
  EXPECT_EQ(allowedNames("TREE_SIMPLE", CollType::kReduceScatter), "rec_halving");
  EXPECT_EQ(allowedNames("TREE_SIMPLE", CollType::kBroadcast), "binomial");
  EXPECT_TRUE(allows("tree", CollType::kAllReduce, "tree"));
  // SIMPLE, the one protocol here, allows everything; LL and LL128 nothing.
  EXPECT_TRUE(allows("SIMPLE", CollType::kAlltoAll, "bruck"));
  EXPECT_EQ(allowedNames("LL128", CollType::kAllReduce), "");
  EXPECT_EQ(allowedNames("NVLS,PAT,COLLNET", CollType::kAllReduce), "");
}

TEST(CallSelection, OrAndNot) {
  using algo::CollType;
  EXPECT_TRUE(allows("ring,tree", CollType::kAllReduce, "ring"));
  EXPECT_TRUE(allows("ring,tree", CollType::kAllReduce, "tree"));
  EXPECT_FALSE(allows("ring,tree", CollType::kAllReduce, "direct"));
  EXPECT_EQ(allowedNames("rec+^rec_h", CollType::kReduceScatter), "");  // ReduceScatter's rec is rec_halving only
  EXPECT_TRUE(allows("rec+^rec_h", CollType::kAllReduce, "rec_doubling"));
  EXPECT_FALSE(allows("^ring", CollType::kAllReduce, "ring"));
  EXPECT_TRUE(allows("^ring", CollType::kAllReduce, "direct"));
  EXPECT_TRUE(allows(" ring , ^SIMPLE ", CollType::kAllReduce, "ring"));  // spaces around names are ignored
}

TEST(CallSelection, MistakesAreErrorsThatNameThem) {
  using algo::CollType;
  EXPECT_NE(allowedNames("rign", CollType::kAllReduce).find("'RIGN'"), std::string::npos);
  EXPECT_NE(allowedNames("ring,,tree", CollType::kAllReduce).find("empty term"), std::string::npos);
  EXPECT_NE(allowedNames("ring+", CollType::kAllReduce).find("empty name"), std::string::npos);
  EXPECT_NE(allowedNames("^", CollType::kAllReduce).find("empty name"), std::string::npos);
}

TEST(CallSelection, InternedSelectionsAreOnePointerPerTextAndStrictness) {
  const CallSelection *a = nullptr, *b = nullptr, *c = nullptr;
  ASSERT_TRUE(internSelection("ring", true, &a).isOk());
  ASSERT_TRUE(internSelection(std::string("ring").c_str(), true, &b).isOk());
  ASSERT_TRUE(internSelection("ring", false, &c).isOk());
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_FALSE(c->required());
  EXPECT_FALSE(internSelection("no_such", true, &a).isOk());
}

TEST(CallSelection, TheSelectorRunsTheFastestItAllowsOrNone) {
  Selector selector;
  algo::CollShape shape{algo::CollType::kAllReduce, 8, 0, 1 << 20, 4, 0};
  const CallSelection* s = nullptr;
  ASSERT_TRUE(internSelection("rec_doubling,tree", true, &s).isOk());
  const algo::Algorithm* chosen = choose(shape, selector, s);
  ASSERT_NE(chosen, nullptr);
  EXPECT_TRUE(std::string(chosen->name) == "rec_doubling" || std::string(chosen->name) == "tree");
  const double other =
      predict(find(shape.type, std::string(chosen->name) == "tree" ? "rec_doubling" : "tree"), shape, selector.costs);
  EXPECT_LE(predict(*chosen, shape, selector.costs), other * 1.02);
  // The rules of CHORUS_ALGO give way to the call's selection.
  selector.rules.push_back(AlgoRule{false, true, algo::CollType::kAllReduce, "ring"});
  EXPECT_NE(std::string(choose(shape, selector, s)->name), "ring");
  EXPECT_EQ(std::string(choose(shape, selector)->name), "ring");
  ASSERT_TRUE(internSelection("hier", true, &s).isOk());  // one host: hier cannot run the shape
  EXPECT_EQ(choose(shape, selector, s), nullptr);
  ASSERT_TRUE(internSelection("hier", false, &s).isOk());
  EXPECT_EQ(std::string(choose(shape, selector, s)->name), "ring");  // not required: the choice without it
}

}  // namespace
}  // namespace chorus::tuner

namespace chorus::testing {
namespace {

// Over processes: a selected AllReduce, run and submitted, gives the sum; a selection none can satisfy is the same
// error on every rank, and the communicator goes on.
TEST(CallSelectionProcesses, SelectedCallsRunAndUnsatisfiableOnesFailAlike) {
  auto results = runProcesses(3, "shm", [](Communicator& comm) -> std::string {
    std::vector<float> v(5000, static_cast<float>(comm.rank() + 1));
    CollArgs args(Collective::kAllReduce, v.data(), v.data(), v.size(), DataType::kFloat32, RedOp::sum());
    args.algorithms = "rec_doubling";
    if (Status st = comm.run(args); !st.isOk()) return "run: " + st.message();
    args.algorithms = "RING_SIMPLE";
    if (Status st = comm.submit(args).wait(); !st.isOk()) return "submit: " + st.message();
    if (v[4999] != 6.0f * 3) return "sum " + std::to_string(v[4999]);
    args.algorithms = "NVLS";
    Status st = comm.run(args);
    if (st.code() != ErrorCode::kInvalidArgument) return "NVLS: " + st.message();
    args.algorithms = "nonsense";
    st = comm.run(args);
    if (st.code() != ErrorCode::kInvalidArgument || st.message().find("NONSENSE") == std::string::npos)
      return "nonsense: " + st.message();
    args.algorithms = nullptr;
    if (Status again = comm.run(args); !again.isOk()) return "after: " + again.message();
    return "";
  });
  for (size_t r = 0; r < results.size(); ++r)
    EXPECT_EQ(results[r].exitCode, 0) << "rank " << r << ": " << results[r].message;
}

}  // namespace
}  // namespace chorus::testing

// chorus's nccl.h against NVIDIA's (shipped with the CUDA toolkit): every enum value, alias, size and the
// ncclConfig_t layout of the NCCL 2.23 API must be the same.
#include <gtest/gtest.h>

extern "C" {
#include "values.h"
}

TEST(NcclAbi, MatchesNvidiasHeader) {
  AbiValues ours, theirs;
  chorusAbiValues(&ours);
  nvidiaAbiValues(&theirs);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(ours.results[i], theirs.results[i]) << "ncclResult_t #" << i;
  for (int i = 0; i < 6; ++i) EXPECT_EQ(ours.ops[i], theirs.ops[i]) << "ncclRedOp_t #" << i;
  for (int i = 0; i < 10; ++i) EXPECT_EQ(ours.types[i], theirs.types[i]) << "ncclDataType_t #" << i;
  for (int i = 0; i < 5; ++i) EXPECT_EQ(ours.aliases[i], theirs.aliases[i]) << "type alias #" << i;
  EXPECT_EQ(ours.residence[0], theirs.residence[0]);
  EXPECT_EQ(ours.residence[1], theirs.residence[1]);
  EXPECT_EQ(ours.uniqueIdSize, theirs.uniqueIdSize);
  for (int i = 0; i < 9; ++i) EXPECT_EQ(ours.configOffsets[i], theirs.configOffsets[i]) << "ncclConfig_t field #" << i;
  EXPECT_EQ(ours.simInfoSize, theirs.simInfoSize);
  EXPECT_EQ(ours.splitNoColor, theirs.splitNoColor);
  EXPECT_EQ(ours.configUndefInt, theirs.configUndefInt);
  EXPECT_EQ(ours.uniqueIdBytes, theirs.uniqueIdBytes);
  EXPECT_EQ(ours.maxRedOp, theirs.maxRedOp);
}

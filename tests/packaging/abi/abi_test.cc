// chorus's nccl.h against NVIDIA's (shipped with the CUDA toolkit): every enum value, alias, size and the
// ncclConfig_t layout and initializer and every flag of the NCCL 2.28.9 API must be the same. (The version macros
// differ on purpose: see nccl.h.) chorus's ncclConfig_t is 2.32's, larger: its 2.28 fields must lie where 2.28's
// do; what 2.29-2.32 added is checked against the published layouts in nccl_232_layout.c.
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
  for (int i = 0; i < 13; ++i) EXPECT_EQ(ours.types[i], theirs.types[i]) << "ncclDataType_t #" << i;
  for (int i = 0; i < 5; ++i) EXPECT_EQ(ours.aliases[i], theirs.aliases[i]) << "type alias #" << i;
  EXPECT_EQ(ours.residence[0], theirs.residence[0]);
  EXPECT_EQ(ours.residence[1], theirs.residence[1]);
  EXPECT_EQ(ours.uniqueIdSize, theirs.uniqueIdSize);
  EXPECT_GE(ours.configSize, theirs.configSize);
  for (int i = 0; i < 17; ++i) EXPECT_EQ(ours.configOffsets[i], theirs.configOffsets[i]) << "ncclConfig_t field #" << i;
  for (int i = 0; i < 14; ++i)
    EXPECT_EQ(ours.configInitializer[i], theirs.configInitializer[i]) << "NCCL_CONFIG_INITIALIZER field #" << i;
  EXPECT_EQ(ours.simInfoSize, theirs.simInfoSize);
  EXPECT_EQ(ours.splitNoColor, theirs.splitNoColor);
  EXPECT_EQ(ours.configUndefInt, theirs.configUndefInt);
  EXPECT_EQ(ours.uniqueIdBytes, theirs.uniqueIdBytes);
  EXPECT_EQ(ours.maxRedOp, theirs.maxRedOp);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(ours.windowFlags[i], theirs.windowFlags[i]) << "window flag #" << i;
    EXPECT_EQ(ours.ctaPolicies[i], theirs.ctaPolicies[i]) << "CTA policy #" << i;
    EXPECT_EQ(ours.shrinkRevokeFlags[i], theirs.shrinkRevokeFlags[i]) << "shrink/revoke flag #" << i;
  }
}

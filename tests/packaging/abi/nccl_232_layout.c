/* What NCCL 2.29-2.32 added to nccl.h, as chorus's header has it, against the published definitions of 2.32
 * (NVIDIA/nccl's nccl.h.in and the user guide's types page, x86-64/aarch64 LP64): struct sizes and field offsets,
 * initializer values, enum values and flags. Built as C, so the header is checked under a C compiler too. Exits 1
 * naming the first fact that differs. */
#include <limits.h>
#include <stddef.h>
#include <stdio.h>

#include "nccl.h"

static int failures = 0;
static void expect(long ours, long published, const char* what) {
  if (ours == published) return;
  fprintf(stderr, "%s: chorus %ld, NCCL 2.32 %ld\n", what, ours, published);
  ++failures;
}
#define EXPECT(ours, published) expect((long)(ours), (long)(published), #ours)

int main(void) {
  /* ncclConfig_t grew by nine ints after nvlinkCentricSched (offset 76). */
  EXPECT(sizeof(ncclConfig_t), 120);
  EXPECT(offsetof(ncclConfig_t, nvlinkCentricSched), 76);
  EXPECT(offsetof(ncclConfig_t, graphUsageMode), 80);
  EXPECT(offsetof(ncclConfig_t, numRmaCtx), 84);
  EXPECT(offsetof(ncclConfig_t, maxP2pPeers), 88);
  EXPECT(offsetof(ncclConfig_t, graphStreamOrdering), 92);
  EXPECT(offsetof(ncclConfig_t, launchOrderImplicit), 96);
  EXPECT(offsetof(ncclConfig_t, numRmaSig), 100);
  EXPECT(offsetof(ncclConfig_t, rmaEagerInit), 104);
  EXPECT(offsetof(ncclConfig_t, hostCftMode), 108);
  EXPECT(offsetof(ncclConfig_t, nvlsHostMode), 112);
  {
    ncclConfig_t c = NCCL_CONFIG_INITIALIZER;
    EXPECT(c.size, 120);
    EXPECT(c.magic, 0xcafebeef);
    EXPECT(c.graphUsageMode, INT_MIN);
    EXPECT(c.rmaEagerInit, INT_MIN);
    EXPECT(c.nvlsHostMode, INT_MIN);
  }
  /* ncclCollConfig_t (2.31; launchCompletionEvent 2.32) and its extension options. */
  EXPECT(sizeof(ncclCollConfig_t), 72);
  EXPECT(offsetof(ncclCollConfig_t, magic), 8);
  EXPECT(offsetof(ncclCollConfig_t, version), 12);
  EXPECT(offsetof(ncclCollConfig_t, ext), 16);
  EXPECT(offsetof(ncclCollConfig_t, minCTAs), 24);
  EXPECT(offsetof(ncclCollConfig_t, maxCTAs), 28);
  EXPECT(offsetof(ncclCollConfig_t, nvlsCTAs), 32);
  EXPECT(offsetof(ncclCollConfig_t, cgaClusterSize), 36);
  EXPECT(offsetof(ncclCollConfig_t, algSelection), 40);
  EXPECT(offsetof(ncclCollConfig_t, forceAlgSelection), 48);
  EXPECT(offsetof(ncclCollConfig_t, CTAPolicy), 52);
  EXPECT(offsetof(ncclCollConfig_t, userProfilerTag), 56);
  EXPECT(offsetof(ncclCollConfig_t, launchCompletionEvent), 64);
  {
    ncclCollConfig_t c = NCCL_COLLCONFIG_INITIALIZER;
    EXPECT(c.size, 72);
    EXPECT(c.magic, NCCL_API_MAGIC);
    EXPECT(c.ext == NULL, 1);
    EXPECT(c.minCTAs, INT_MIN);
    EXPECT(c.cgaClusterSize, INT_MIN);
    EXPECT(c.algSelection == NULL, 1);
    EXPECT(c.forceAlgSelection, 1);
    EXPECT(c.CTAPolicy, INT_MIN);
    EXPECT(c.userProfilerTag, 0);
    EXPECT(c.launchCompletionEvent == NULL, 1);
  }
  EXPECT(sizeof(ncclConfigExt_t), 24);
  EXPECT(offsetof(ncclConfigExt_t, key), 8);
  EXPECT(offsetof(ncclConfigExt_t, val), 16);
  EXPECT(sizeof(ncclWaitSignalDesc_t), 16);
  EXPECT(offsetof(ncclWaitSignalDesc_t, ctx), 12);
  /* ncclEncryptionConfig_t (2.32): size, magic, version, mode, psk, 32 bytes (the user guide's types page; its mode
   * values are named there, not numbered, and chorus takes NONE = 0, PSK = 1). */
  EXPECT(sizeof(ncclEncryptionConfig_t), 32);
  EXPECT(offsetof(ncclEncryptionConfig_t, magic), 8);
  EXPECT(offsetof(ncclEncryptionConfig_t, version), 12);
  EXPECT(offsetof(ncclEncryptionConfig_t, mode), 16);
  EXPECT(offsetof(ncclEncryptionConfig_t, psk), 24);
  {
    ncclEncryptionConfig_t c = NCCL_ENCRYPTION_CONFIG_INITIALIZER;
    EXPECT(c.size, 32);
    EXPECT(c.magic, NCCL_API_MAGIC);
    EXPECT(c.mode, NCCL_ENCRYPTION_MODE_NONE);
    EXPECT(c.psk == NULL, 1);
  }
  /* Values. */
  EXPECT(NCCL_API_MAGIC, 0xcafebeef);
  EXPECT(ncclNumResults, 9);
  EXPECT(NCCL_WIN_STRICT_ORDERING, 0x02);
  EXPECT(NCCL_WIN_GIN_ONLY, 0x04);
  EXPECT(NCCL_SUSPEND_MEM, 0x01);
  EXPECT(ncclStatGpuMemSuspend, 0);
  EXPECT(ncclStatGpuMemSuspended, 1);
  EXPECT(ncclStatGpuMemPersist, 2);
  EXPECT(ncclStatGpuMemTotal, 3);
  EXPECT(ncclHostCftDefault, INT_MIN);
  EXPECT(ncclHostCftEnable, 1);
  EXPECT(ncclHostCftDisable, 2);
  EXPECT(ncclHostCftFallback, 3);
  EXPECT(ncclNvlsHostModeDefault, INT_MIN);
  EXPECT(ncclNvlsHostModeEnable, 0);
  EXPECT(ncclNvlsHostModeDisableTransport, 1);
  EXPECT(ncclNvlsHostModeDisableSymmetricMultimem, 2);
  EXPECT(ncclNvlsHostModeDisable, INT_MAX);
  if (failures == 0) printf("NCCL 2.29-2.32 layouts and values: as published\n");
  return failures == 0 ? 0 : 1;
}

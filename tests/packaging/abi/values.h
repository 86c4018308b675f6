/* The ABI facts compared between chorus's nccl.h and NVIDIA's: each side fills this table from its own header. */
#ifndef CHORUS_ABI_VALUES_H
#define CHORUS_ABI_VALUES_H
#include <stddef.h>

struct AbiValues {
  long results[8]; /* ncclSuccess .. ncclInProgress */
  long ops[6];     /* ncclSum .. ncclNumOps */
  long types[13];  /* ncclInt8 .. ncclFloat8e5m2, ncclNumTypes */
  long aliases[5]; /* ncclChar, ncclInt, ncclHalf, ncclFloat, ncclDouble */
  long residence[2];
  size_t uniqueIdSize;
  size_t configSize;
  size_t configOffsets[17];   /* every ncclConfig_t field, size .. nvlinkCentricSched */
  long configInitializer[14]; /* NCCL_CONFIG_INITIALIZER's blocking .. nvlinkCentricSched (pointers as 0/1) */
  size_t simInfoSize;
  long splitNoColor, configUndefInt, uniqueIdBytes, maxRedOp;
  long windowFlags[3];       /* NCCL_WIN_DEFAULT, NCCL_WIN_COLL_SYMMETRIC, NCCL_WIN_REQUIRED_ALIGNMENT */
  long ctaPolicies[3];       /* NCCL_CTA_POLICY_DEFAULT, _EFFICIENCY, _ZERO */
  long shrinkRevokeFlags[3]; /* NCCL_SHRINK_DEFAULT, NCCL_SHRINK_ABORT, NCCL_REVOKE_DEFAULT */
};

void chorusAbiValues(struct AbiValues* v);
void nvidiaAbiValues(struct AbiValues* v);
#endif

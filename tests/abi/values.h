/* The ABI facts compared between chorus's nccl.h and NVIDIA's: each side fills this table from its own header. */
#ifndef CHORUS_ABI_VALUES_H
#define CHORUS_ABI_VALUES_H
#include <stddef.h>

struct AbiValues {
  long results[8]; /* ncclSuccess .. ncclInProgress */
  long ops[6];     /* ncclSum .. ncclNumOps */
  long types[10];  /* ncclInt8 .. ncclBfloat16 */
  long aliases[5]; /* ncclChar, ncclInt, ncclHalf, ncclFloat, ncclDouble */
  long residence[2];
  size_t uniqueIdSize;
  size_t configOffsets[9]; /* size, magic, version, blocking, cgaClusterSize, minCTAs, maxCTAs, netName, splitShare */
  size_t simInfoSize;
  long splitNoColor, configUndefInt, uniqueIdBytes, maxRedOp;
};

void chorusAbiValues(struct AbiValues* v);
void nvidiaAbiValues(struct AbiValues* v);
#endif

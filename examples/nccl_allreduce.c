/* NCCL's C API, as a program written for NCCL uses it: two ranks driven from one thread by a group, then a check
 * that the library that answered is chorus's libnccl.so.2 and not another NCCL on the system's library path.
 *
 *   cc nccl_allreduce.c $(pkg-config --cflags --libs chorus-nccl) -ldl -o nccl_allreduce && ./nccl_allreduce
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "nccl.h"

#define CHECK(call)                                                                                   \
  do {                                                                                                \
    ncclResult_t r_ = (call);                                                                         \
    if (r_ != ncclSuccess) {                                                                          \
      fprintf(stderr, "%s failed: %s (%s)\n", #call, ncclGetErrorString(r_), ncclGetLastError(NULL)); \
      return 1;                                                                                       \
    }                                                                                                 \
  } while (0)

int main(void) {
  enum { kRanks = 2, kCount = 4096 };
  ncclComm_t comms[kRanks];
  float* buffers[kRanks];
  int version = 0, rank;
  CHECK(ncclCommInitAll(comms, kRanks, NULL));
  for (rank = 0; rank < kRanks; ++rank) {
    int i;
    buffers[rank] = malloc(kCount * sizeof(float));
    for (i = 0; i < kCount; ++i) buffers[rank][i] = (float)(rank + 1);
  }
  /* One thread drives both ranks: the group runs their calls together at ncclGroupEnd. */
  CHECK(ncclGroupStart());
  for (rank = 0; rank < kRanks; ++rank)
    CHECK(ncclAllReduce(buffers[rank], buffers[rank], kCount, ncclFloat32, ncclSum, comms[rank], NULL));
  CHECK(ncclGroupEnd());
  for (rank = 0; rank < kRanks; ++rank) {
    int i;
    for (i = 0; i < kCount; ++i) {
      if (buffers[rank][i] != 3.0f) {
        fprintf(stderr, "rank %d element %d: %g, expected 3\n", rank, i, buffers[rank][i]);
        return 1;
      }
    }
    free(buffers[rank]);
    CHECK(ncclCommDestroy(comms[rank]));
  }
  CHECK(ncclGetVersion(&version));
  /* chorusGetVersion exists only in chorus's library: looked up at run time, it tells which NCCL is loaded. */
  {
    const char* (*chorusVersion)(void) = (const char* (*)(void))dlsym(RTLD_DEFAULT, "chorusGetVersion");
    if (!chorusVersion) {
      fprintf(stderr, "the loaded libnccl.so.2 is not chorus's (NCCL API %d)\n", version);
      return 2;
    }
    printf("chorus %s (NCCL API %d): AllReduce of %d floats on %d ranks gave 3 everywhere\n", chorusVersion(), version,
           kCount, kRanks);
  }
  return 0;
}

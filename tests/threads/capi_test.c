/* The C API as a plain C program sees it: nccl.h compiled as C, linked against chorus's libnccl.so.2.
 * Four ranks in one process (ncclCommInitAll), driven from this one thread through groups. */
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0, passes = 0;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (cond) {                                                                \
      ++passes;                                                                \
    } else {                                                                   \
      ++failures;                                                              \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                          \
  } while (0)

#define N 4
#define COUNT 1000

int main(void) {
  int version = 0;
  CHECK(ncclGetVersion(&version) == ncclSuccess && version == NCCL_VERSION_CODE);
  CHECK(strcmp(ncclGetErrorString(ncclSuccess), "no error") == 0);
  CHECK(strcmp(ncclGetErrorString(ncclInvalidArgument), "invalid argument (run with NCCL_DEBUG=WARN for details)") ==
        0);

  ncclComm_t comms[N];
  CHECK(ncclCommInitAll(comms, N, NULL) == ncclSuccess);
  for (int r = 0; r < N; ++r) {
    int count = 0, rank = -1;
    CHECK(ncclCommCount(comms[r], &count) == ncclSuccess && count == N);
    CHECK(ncclCommUserRank(comms[r], &rank) == ncclSuccess && rank == r);
  }

  /* AllReduce sum and a PreMulSum from one thread: every rank inside one group. */
  float* data[N];
  ncclRedOp_t premul[N];
  for (int r = 0; r < N; ++r) {
    data[r] = malloc(COUNT * sizeof(float));
    for (int i = 0; i < COUNT; ++i) data[r][i] = (float)(r + 1);
    float scalar = (float)(r + 1);
    CHECK(ncclRedOpCreatePreMulSum(&premul[r], &scalar, ncclFloat32, ncclScalarHostImmediate, comms[r]) == ncclSuccess);
  }
  CHECK(ncclGroupStart() == ncclSuccess);
  for (int r = 0; r < N; ++r)
    CHECK(ncclAllReduce(data[r], data[r], COUNT, ncclFloat, ncclSum, comms[r], NULL) == ncclSuccess);
  CHECK(ncclGroupEnd() == ncclSuccess);
  for (int r = 0; r < N; ++r) CHECK(data[r][0] == 10.0f && data[r][COUNT - 1] == 10.0f);
  CHECK(ncclGroupStart() == ncclSuccess);
  for (int r = 0; r < N; ++r)
    CHECK(ncclAllReduce(data[r], data[r], COUNT, ncclFloat, premul[r], comms[r], NULL) == ncclSuccess);
  CHECK(ncclGroupEnd() == ncclSuccess);
  for (int r = 0; r < N; ++r) CHECK(data[r][7] == 100.0f); /* 10 * (1 + 2 + 3 + 4) */
  for (int r = 0; r < N; ++r) CHECK(ncclRedOpDestroy(premul[r], comms[r]) == ncclSuccess);
  CHECK(ncclRedOpDestroy(premul[0], comms[0]) == ncclInvalidArgument);

  /* Send/Recv ring in one group must not deadlock. */
  int sendv[N], recvv[N];
  CHECK(ncclGroupStart() == ncclSuccess);
  for (int r = 0; r < N; ++r) {
    sendv[r] = 100 + r;
    CHECK(ncclSend(&sendv[r], 1, ncclInt32, (r + 1) % N, comms[r], NULL) == ncclSuccess);
    CHECK(ncclRecv(&recvv[r], 1, ncclInt32, (r + N - 1) % N, comms[r], NULL) == ncclSuccess);
  }
  CHECK(ncclGroupEnd() == ncclSuccess);
  for (int r = 0; r < N; ++r) CHECK(recvv[r] == 100 + (r + N - 1) % N);

  /* Errors: bad arguments come back as codes, with a message. */
  CHECK(ncclAllReduce(data[0], data[0], COUNT, ncclFloat, ncclSum, NULL, NULL) == ncclInvalidArgument);
  CHECK(strlen(ncclGetLastError(NULL)) > 0);
  CHECK(ncclAllReduce(data[0], data[0], COUNT, (ncclDataType_t)77, ncclSum, comms[0], NULL) == ncclInvalidArgument);
  CHECK(ncclAllReduce(NULL, data[0], COUNT, ncclFloat, ncclSum, comms[0], NULL) == ncclInvalidArgument);
  CHECK(ncclAllReduce(data[0], data[0], COUNT, ncclFloat, (ncclRedOp_t)42, comms[0], NULL) == ncclInvalidArgument);
  CHECK(ncclBroadcast(data[0], data[0], COUNT, ncclFloat, N, comms[0], NULL) == ncclInvalidArgument);
  CHECK(ncclGroupEnd() == ncclInvalidUsage);
  ncclResetDebugInit(); /* re-reads the logging settings; must not disturb anything */
  CHECK(ncclAllReduce(data[0], data[0], 0, ncclFloat, ncclSum, comms[0], NULL) == ncclSuccess);

  /* Config: read by size and magic. */
  ncclUniqueId id;
  CHECK(ncclGetUniqueId(&id) == ncclSuccess);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.magic = 0;
  ncclComm_t one = NULL;
  CHECK(ncclCommInitRankConfig(&one, 1, id, 0, &config) == ncclInvalidArgument);
  ncclConfig_t good = NCCL_CONFIG_INITIALIZER;
  CHECK(ncclCommInitRankConfig(&one, 1, id, 0, &good) == ncclSuccess);
  CHECK(ncclCommDestroy(one) == ncclSuccess);
  ncclComm_t outside = NULL;
  CHECK(ncclCommInitRank(&outside, 2, id, 5) == ncclInvalidArgument);
  CHECK(outside == NULL);

  for (int r = 0; r < N; ++r) {
    CHECK(ncclCommDestroy(comms[r]) == ncclSuccess);
    free(data[r]);
  }
  CHECK(ncclCommDestroy(NULL) == ncclSuccess);
  printf("%d passed, %d failed\n", passes, failures);
  return failures == 0 ? 0 : 1;
}

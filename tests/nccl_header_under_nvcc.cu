// CUDA code of the kind NCCL programs are (nccl-tests' common.cu among them), compiled by nvcc against chorus's
// nccl.h: the half and bfloat16 types come from the header, as from NVIDIA's.
#include <nccl.h>

__global__ void fill(half* h, __nv_bfloat16* b, size_t n) {
  size_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    h[i] = __float2half(1.0f);
    b[i] = __float2bfloat16(1.0f);
  }
}

ncclResult_t reduceHalves(half* buf, size_t n, ncclComm_t comm, cudaStream_t stream) {
  fill<<<1, 1, 0, stream>>>(buf, nullptr, 0);
  return ncclAllReduce(buf, buf, n, ncclHalf, ncclSum, comm, stream);
}

// CUDA code of the kind NCCL programs are (nccl-tests' common.cu among them), compiled by nvcc against chorus's
// nccl.h: the half, bfloat16 and fp8 types come from the header, as from NVIDIA's.
#include <nccl.h>

__global__ void fill(half* h, __nv_bfloat16* b, __nv_fp8_e4m3* e4, __nv_fp8_e5m2* e5, size_t n) {
  size_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    h[i] = __float2half(1.0f);
    b[i] = __float2bfloat16(1.0f);
    e4[i] = __nv_fp8_e4m3(1.0f);
    e5[i] = __nv_fp8_e5m2(1.0f);
  }
}

ncclResult_t reduceHalves(half* buf, size_t n, ncclComm_t comm, cudaStream_t stream) {
  fill<<<1, 1, 0, stream>>>(buf, nullptr, nullptr, nullptr, 0);
  return ncclAllReduce(buf, buf, n, ncclHalf, ncclSum, comm, stream);
}

ncclResult_t reduceFp8(__nv_fp8_e4m3* buf, size_t n, ncclComm_t comm, cudaStream_t stream) {
  return ncclAllReduce(buf, buf, n, ncclFloat8e4m3, ncclMax, comm, stream);
}

// The GPU's own copy bandwidth, the roofline the perf tools' device-memory figures are read against: cudaMemcpyAsync
// from one device buffer to another, timed with CUDA events, over the same size sweep as the perf tools.
// Usage: device_copy_bandwidth [-b min] [-e max] [-f factor] [-n iters] [-d device]
#include <cuda_runtime.h>
#include <getopt.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

size_t parseSize(const char* text) {
  char* end = nullptr;
  double v = strtod(text, &end);
  const std::string suffix = end;
  const double mult = suffix == "K" || suffix == "k"   ? 1 << 10
                      : suffix == "M" || suffix == "m" ? 1 << 20
                      : suffix == "G" || suffix == "g" ? 1 << 30
                                                       : 1;
  return static_cast<size_t>(v * mult);
}

int fail(const char* what, cudaError_t e) {
  fprintf(stderr, "device_copy_bandwidth: %s: %s\n", what, cudaGetErrorString(e));
  return 3;
}

}  // namespace

int main(int argc, char** argv) {
  size_t minBytes = 8, maxBytes = 1 << 30, factor = 2;
  int iters = 20, device = 0;
  for (int c; (c = getopt(argc, argv, "b:e:f:n:d:h")) != -1;) {
    switch (c) {
      case 'b':
        minBytes = parseSize(optarg);
        break;
      case 'e':
        maxBytes = parseSize(optarg);
        break;
      case 'f':
        factor = strtoul(optarg, nullptr, 10);
        break;
      case 'n':
        iters = atoi(optarg);
        break;
      case 'd':
        device = atoi(optarg);
        break;
      default:
        fprintf(stderr, "usage: %s [-b min] [-e max] [-f factor] [-n iters] [-d device]\n", argv[0]);
        return c == 'h' ? 0 : 2;
    }
  }
  if (factor < 2 || iters < 1 || minBytes == 0 || minBytes > maxBytes) {
    fprintf(stderr, "device_copy_bandwidth: need -f >= 2, -n >= 1 and 0 < -b <= -e\n");
    return 2;
  }
  cudaError_t e = cudaSetDevice(device);
  if (e != cudaSuccess) return fail("cudaSetDevice", e);
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, device);
  void *src = nullptr, *dst = nullptr;
  if ((e = cudaMalloc(&src, maxBytes)) != cudaSuccess || (e = cudaMalloc(&dst, maxBytes)) != cudaSuccess) {
    return fail("cudaMalloc", e);
  }
  cudaStream_t stream;
  cudaEvent_t start, stop;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  printf("# device %d: %s\n# %12s  %10s  %10s\n", device, prop.name, "size (B)", "time (us)", "copy GB/s");
  for (size_t bytes = minBytes; bytes <= maxBytes; bytes *= factor) {
    cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream);  // warm-up
    cudaEventRecord(start, stream);
    for (int i = 0; i < iters; ++i) cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream);
    cudaEventRecord(stop, stream);
    if ((e = cudaEventSynchronize(stop)) != cudaSuccess) return fail("cudaMemcpyAsync", e);
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    const double us = 1000.0 * ms / iters;
    printf("  %12zu  %10.2f  %10.2f\n", bytes, us, static_cast<double>(bytes) / us / 1e3);
    if (bytes > maxBytes / factor) break;
  }
  return 0;
}

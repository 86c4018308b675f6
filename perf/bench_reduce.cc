// Google Benchmark of the host reduction kernels: bytes of output per second for every type, sum and max,
// on a 1 MiB buffer (L2-resident) and a 64 MiB one (memory-bound). memcpy is the reference line.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "kernels/copy.hpp"
#include "kernels/reduce.hpp"
#include "perf/data.hpp"

namespace {

using chorus::DataType;
using chorus::RedOpKind;

void reduce(benchmark::State& state, DataType type, RedOpKind op) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  const size_t count = bytes / chorus::dataTypeSize(type);
  // 0x3c.. bytes are normal numbers in every float format (subnormals would measure the slow path).
  std::vector<unsigned char> a(bytes, 0x3c), b(bytes, 0x3d), out(bytes);
  auto fn = chorus::kernels::reduceFunction(type, op);
  for (auto _ : state) {
    fn(out.data(), a.data(), b.data(), count);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(bytes));
}

void copy(benchmark::State& state) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  std::vector<unsigned char> a(bytes, 1), out(bytes);
  for (auto _ : state) {
    memcpy(out.data(), a.data(), bytes);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(bytes));
}

// Every core copying its own buffer at once, with memcpy or with streaming stores: the aggregate rate (bytes copied
// by all cores per second) is what the memory system gives a collective whose ranks all copy; perf/compare turns
// the better of the two into each collective's roofline.
void copyAllCores(benchmark::State& state, void (*copyFn)(void*, const void*, size_t)) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::vector<unsigned char>> in(cores, std::vector<unsigned char>(bytes, 1));
  std::vector<std::vector<unsigned char>> out(cores, std::vector<unsigned char>(bytes, 0));
  for (auto _ : state) {
    std::vector<std::thread> threads;
    for (unsigned c = 0; c < cores; ++c) {
      threads.emplace_back([&, c] { copyFn(out[c].data(), in[c].data(), bytes); });
    }
    for (auto& t : threads) t.join();
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(bytes * cores));
  state.counters["cores"] = cores;
}

// A page-aligned source into a destination `ahead` bytes further into its page, as from a FIFO or a staging area
// into a malloc'd buffer (16 bytes into a page): glibc's memcpy against kernels::copy, which avoids its slow case.
void copyAhead(benchmark::State& state, void (*copyFn)(void*, const void*, size_t)) {
  const size_t bytes = static_cast<size_t>(state.range(0)), ahead = static_cast<size_t>(state.range(1));
  const size_t span = (bytes + 4096) / 4096 * 4096;
  std::unique_ptr<unsigned char, decltype(&free)> in(static_cast<unsigned char*>(aligned_alloc(4096, span)), &free),
      out(static_cast<unsigned char*>(aligned_alloc(4096, span)), &free);
  memset(in.get(), 1, span);
  memset(out.get(), 0, span);
  for (auto _ : state) {
    copyFn(out.get() + ahead, in.get(), bytes);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(bytes));
}

// One core copying 8 MiB with streaming stores from a source of zeros (range 0) or of float ones (range 1), as
// the perf tools' buffers held before and hold now (perf/data.hpp, fillBackground): zeros copy faster
// (perf/archive/2026-11-29-buffers-full-of-zeros-streaming-stores-measured-too-fast.md), so what a perf tool measures
// on zero-filled buffers flatters streaming stores.
void streamingCopyOf(benchmark::State& state) {
  const size_t bytes = size_t{8} << 20;
  std::unique_ptr<unsigned char, decltype(&free)> in(static_cast<unsigned char*>(aligned_alloc(4096, bytes)), &free),
      out(static_cast<unsigned char*>(aligned_alloc(4096, bytes)), &free);
  if (state.range(0) == 1)
    chorus::perf::fillBackground(in.get(), bytes, ncclFloat32);
  else
    memset(in.get(), 0, bytes);
  memset(out.get(), 0, bytes);
  for (auto _ : state) {
    chorus::kernels::streamingCopy(out.get(), in.get(), bytes);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(bytes));
  state.SetLabel(state.range(0) == 1 ? "floats" : "zeros");
}

constexpr int64_t kSmall = 1 << 20, kLarge = 64 << 20;

BENCHMARK(copy)->Arg(kSmall)->Arg(kLarge);
BENCHMARK(streamingCopyOf)->Arg(0)->Arg(1);
void plainCopy(void* dst, const void* src, size_t bytes) { memcpy(dst, src, bytes); }
BENCHMARK_CAPTURE(copyAllCores, memcpy, plainCopy)->Arg(kLarge)->UseRealTime();
BENCHMARK_CAPTURE(copyAllCores, streaming, chorus::kernels::streamingCopy)->Arg(kLarge)->UseRealTime();
BENCHMARK_CAPTURE(copyAhead, memcpy, plainCopy)->ArgsProduct({{4 << 10, 64 << 10, 1 << 20}, {0, 16, 64}});
BENCHMARK_CAPTURE(copyAhead, kernels_copy, chorus::kernels::copy)
    ->ArgsProduct({{4 << 10, 64 << 10, 1 << 20}, {0, 16, 64}});
#define CHORUS_BENCH(name, type, op) \
  BENCHMARK_CAPTURE(reduce, name, DataType::type, RedOpKind::op)->Arg(kSmall)->Arg(kLarge)
CHORUS_BENCH(int8_sum, kInt8, kSum);
CHORUS_BENCH(uint8_sum, kUint8, kSum);
CHORUS_BENCH(int32_sum, kInt32, kSum);
CHORUS_BENCH(uint32_sum, kUint32, kSum);
CHORUS_BENCH(int64_sum, kInt64, kSum);
CHORUS_BENCH(uint64_sum, kUint64, kSum);
CHORUS_BENCH(half_sum, kFloat16, kSum);
CHORUS_BENCH(bfloat16_sum, kBfloat16, kSum);
CHORUS_BENCH(float_sum, kFloat32, kSum);
CHORUS_BENCH(double_sum, kFloat64, kSum);
CHORUS_BENCH(float_max, kFloat32, kMax);
CHORUS_BENCH(float_prod, kFloat32, kProd);

}  // namespace

BENCHMARK_MAIN();

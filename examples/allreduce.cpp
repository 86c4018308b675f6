// chorus's C++ API: four ranks in one process, one thread each, sum a vector with AllReduce.
//
//   cmake -S examples -B build-examples -DCMAKE_PREFIX_PATH=<chorus prefix> && cmake --build build-examples
//   build-examples/allreduce_cpp
#include <chorus/communicator.hpp>
#include <chorus/version.hpp>
#include <cstdio>
#include <thread>
#include <vector>

int main() {
  constexpr int kRanks = 4;
  constexpr size_t kCount = 1 << 20;
  std::vector<std::unique_ptr<chorus::Communicator>> comms;
  if (chorus::Status st = chorus::Communicator::createLocal(kRanks, &comms); !st.isOk()) {
    fprintf(stderr, "createLocal failed: %s\n", st.message().c_str());
    return 1;
  }
  std::vector<std::vector<float>> data(kRanks);
  std::vector<chorus::Status> results(kRanks);
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r) {
    data[r].assign(kCount, static_cast<float>(r + 1));
    // A communicator is driven by one thread at a time; each rank gets its own.
    threads.emplace_back([&, r] {
      results[r] =
          comms[r]->allReduce(data[r].data(), data[r].data(), kCount, chorus::DataType::kFloat32, chorus::RedOp::sum());
    });
  }
  for (auto& t : threads) t.join();
  const float expected = kRanks * (kRanks + 1) / 2.0f;  // 1 + 2 + 3 + 4
  for (int r = 0; r < kRanks; ++r) {
    if (!results[r].isOk()) {
      fprintf(stderr, "rank %d: %s\n", r, results[r].message().c_str());
      return 1;
    }
    for (float v : data[r]) {
      if (v != expected) {
        fprintf(stderr, "rank %d: got %g, expected %g\n", r, v, expected);
        return 1;
      }
    }
  }
  printf("chorus %s: AllReduce of %zu floats on %d ranks gave %g everywhere\n", chorus::version(), kCount, kRanks,
         expected);
  return 0;
}

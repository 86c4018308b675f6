// Settings for one communicator in place of the environment's: two ranks, one thread each, whose communicator uses
// the ring algorithm for AllReduce whatever CHORUS_ALGO says; a misspelled setting fails create() naming it.
//
//   build/examples/settings_per_communicator
#include <chorus/communicator.hpp>
#include <chorus/unique_id.hpp>
#include <cstdio>
#include <thread>
#include <vector>

int main() {
  constexpr int nranks = 2;
  chorus::UniqueId id;
  if (chorus::Status st = chorus::UniqueId::create(&id); !st.isOk()) {
    fprintf(stderr, "%s\n", st.message().c_str());
    return 1;
  }
  std::vector<chorus::Status> results(nranks);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < nranks; ++rank) {
    threads.emplace_back([&, rank] {
      std::unique_ptr<chorus::Communicator> comm;
      chorus::CommConfig config;
      config.settings = {{"CHORUS_ALGO", "allreduce:ring"}, {"CHORUS_TCP_BUFFER", "1M"}};
      chorus::Status st = chorus::Communicator::create(id, nranks, rank, &comm, config);
      std::vector<float> data(1000, 1.0f);
      if (st.isOk())
        st = comm->allReduce(data.data(), data.data(), data.size(), chorus::DataType::kFloat32, chorus::RedOp::sum());
      if (st.isOk() && data.back() != nranks) st = chorus::Status(chorus::ErrorCode::kInternalError, "wrong sum");
      results[rank] = st;
    });
  }
  for (auto& t : threads) t.join();
  for (int rank = 0; rank < nranks; ++rank) {
    if (!results[rank].isOk()) {
      fprintf(stderr, "rank %d: %s\n", rank, results[rank].message().c_str());
      return 1;
    }
  }

  // A misspelled name fails create() with an error that names it (one rank here, so nobody waits for it).
  chorus::CommConfig misspelled;
  misspelled.settings = {{"CHORUS_TCP_BUFER", "1M"}};
  std::unique_ptr<chorus::Communicator> refused;
  chorus::Status st = chorus::UniqueId::create(&id);
  if (st.isOk()) st = chorus::Communicator::create(id, 1, 0, &refused, misspelled);
  if (st.isOk() || st.code() != chorus::ErrorCode::kInvalidArgument) {
    fprintf(stderr, "a misspelled setting was accepted\n");
    return 1;
  }
  printf("AllReduce with per-communicator settings on %d ranks; a misspelled one: %s\n", nranks, st.message().c_str());
  return 0;
}

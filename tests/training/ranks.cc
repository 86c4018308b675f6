#include "training/ranks.hpp"

#include <thread>

#include "support/process_ranks.hpp"

namespace chorus::testing {

std::string onRanks(int nranks, RankKind kind, const std::function<std::string(Communicator&)>& body) {
  std::string failures;
  if (kind == RankKind::kProcesses) {
    std::vector<ProcessResult> results = runProcesses(nranks, "shm", body, 300);
    for (size_t r = 0; r < results.size(); ++r) {
      if (results[r].exitCode != 0)
        failures += "rank " + std::to_string(r) + " exited " + std::to_string(results[r].exitCode) + "; ";
    }
    return failures;
  }
  std::vector<std::unique_ptr<Communicator>> comms;
  Status st = Communicator::createLocal(nranks, &comms);
  if (!st.isOk()) return st.message();
  std::vector<std::string> messages(nranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < nranks; ++r) threads.emplace_back([&, r] { messages[r] = body(*comms[r]); });
  for (auto& t : threads) t.join();
  for (int r = 0; r < nranks; ++r)
    if (!messages[r].empty()) failures += "rank " + std::to_string(r) + ": " + messages[r] + "; ";
  return failures;
}

}  // namespace chorus::testing

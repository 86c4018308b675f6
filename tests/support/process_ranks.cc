#include "tests/support/process_ranks.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "core/settings.hpp"

namespace chorus::testing {

std::vector<ProcessResult> runProcesses(int nranks, const std::string& transport,
                                        const std::function<std::string(Communicator&)>& body, double deadlineSeconds,
                                        const UniqueId* existing) {
  std::vector<ProcessResult> results(nranks);
  UniqueId id;
  if (existing)
    id = *existing;
  else if (!UniqueId::create(&id).isOk())
    return results;
  fflush(stdout);
  fflush(stderr);
  std::vector<pid_t> pids(nranks, -1);
  for (int r = 0; r < nranks; ++r) {
    pid_t pid = fork();
    if (pid == 0) {
      if (!transport.empty()) setenv("CHORUS_TRANSPORT", transport.c_str(), 1);
      reloadSettings();
      std::unique_ptr<Communicator> comm;
      Status st = Communicator::create(id, nranks, r, &comm);
      std::string error = st.isOk() ? body(*comm) : "init failed: " + st.message();
      if (!error.empty()) fprintf(stderr, "[rank %d] %s\n", r, error.c_str());
      fflush(stderr);
      _exit(error.empty() ? 0 : 1);
    }
    pids[r] = pid;
  }
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  int left = nranks;
  while (left > 0) {
    int status = 0;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid > 0) {
      for (int r = 0; r < nranks; ++r) {
        if (pids[r] != pid) continue;
        results[r].exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        results[r].secondsToExit = elapsed();
        --left;
      }
      continue;
    }
    if (elapsed() > deadlineSeconds) {
      for (int r = 0; r < nranks; ++r)
        if (results[r].exitCode < 0) kill(pids[r], SIGKILL);
      deadlineSeconds = 1e9;  // reap the killed ones above
      continue;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return results;
}

}  // namespace chorus::testing

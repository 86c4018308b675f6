#include "tests/support/process_ranks.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "bootstrap/id_handoff.hpp"
#include "core/settings.hpp"
#include "transports/registry.hpp"

namespace chorus::testing {

std::vector<std::string> processTransports() {
  std::vector<std::string> names;
  // Those that cannot run here (ib without an RDMA device) are left out; the conformance suite shows them skipped,
  // with the reason.
  for (const transport::TransportKind* kind : transport::transportKinds())
    if (kind->name != "loopback" && kind->unavailable().empty()) names.push_back(kind->name);
  return names;
}

std::vector<ProcessResult> runProcesses(int nranks, const std::string& transport,
                                        const std::function<std::string(Communicator&)>& body, double deadlineSeconds,
                                        const std::function<Status(UniqueId*)>& makeId,
                                        const std::function<void(int)>& beforeInit) {
  std::vector<ProcessResult> results(nranks);
  bootstrap::IdHandoff handoff;
  if (!handoff.open().isOk()) return results;
  fflush(stdout);
  fflush(stderr);
  std::vector<pid_t> pids(nranks, -1);
  std::vector<int> messagePipes(nranks, -1);  // read ends: each child writes its message there
  for (int r = 0; r < nranks; ++r) {
    int ends[2] = {-1, -1};
    if (pipe(ends) != 0) break;
    pid_t pid = fork();
    if (pid == 0) {
      close(ends[0]);
      if (!transport.empty()) setenv("CHORUS_TRANSPORT", transport.c_str(), 1);
      if (beforeInit) beforeInit(r);
      reloadSettings();
      UniqueId id;
      std::unique_ptr<Communicator> comm;
      Status st = handoff.receive(&id);
      if (st.isOk()) st = Communicator::create(id, nranks, r, &comm);
      std::string error = st.isOk() ? body(*comm) : "init failed: " + st.message();
      if (!error.empty()) fprintf(stderr, "[rank %d] %s\n", r, error.c_str());
      fflush(stderr);
      (void)!write(ends[1], error.data(), std::min<size_t>(error.size(), 4096));
      _exit(error.empty() ? 0 : 1);
    }
    close(ends[1]);
    messagePipes[r] = ends[0];
    pids[r] = pid;
  }
  // Every rank is forked: now the id, and with it the rendezvous root's thread.
  Status made = handoff.handOver(makeId ? makeId : UniqueId::create, nranks);
  if (!made.isOk()) fprintf(stderr, "runProcesses: no id for the ranks: %s\n", made.message().c_str());
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
        char text[4096];
        ssize_t n = read(messagePipes[r], text, sizeof(text));
        if (n > 0) results[r].message.assign(text, static_cast<size_t>(n));
        close(messagePipes[r]);
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

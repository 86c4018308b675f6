// Runs N ranks as forked processes of the test binary: the parent forks them, then creates the UniqueId (and so
// runs the rendezvous root) and hands it over; each child joins, runs the body and exits 0 on success. The parent
// reaps children as they end and kills what is left at the deadline, so a hang fails the test instead of stalling
// it.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "chorus/communicator.hpp"

namespace chorus::testing {

struct ProcessResult {
  int exitCode = -1;         // 128 + signal when killed
  double secondsToExit = 0;  // from the start of the run
  std::string message;       // what the child reported: the body's message, or "init failed: ..."
};

/// Every registered transport that joins ranks in different processes (all but loopback) and can run here, for
/// parameterized tests.
std::vector<std::string> processTransports();

/// `body` returns "" on success or a message (printed by the child). `makeId`, when given, makes the id in the
/// parent once the ranks are forked (default: UniqueId::create). `beforeInit`, when given, runs in each child
/// (with its rank) before it creates its communicator.
std::vector<ProcessResult> runProcesses(int nranks, const std::string& transport,
                                        const std::function<std::string(Communicator&)>& body,
                                        double deadlineSeconds = 120,
                                        const std::function<Status(UniqueId*)>& makeId = nullptr,
                                        const std::function<void(int)>& beforeInit = nullptr);

}  // namespace chorus::testing

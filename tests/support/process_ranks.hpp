// Runs N ranks as forked processes of the test binary: the parent creates the UniqueId (and so runs the
// rendezvous root), each child joins, runs the body and exits 0 on success. The parent reaps children as they
// end and kills what is left at the deadline, so a hang fails the test instead of stalling it.
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

/// `body` returns "" on success or a message (printed by the child). `id` reuses a rendezvous (default: new).
/// `beforeInit`, when given, runs in each child (with its rank) before it creates its communicator.
std::vector<ProcessResult> runProcesses(int nranks, const std::string& transport,
                                        const std::function<std::string(Communicator&)>& body,
                                        double deadlineSeconds = 120, const UniqueId* id = nullptr,
                                        const std::function<void(int)>& beforeInit = nullptr);

}  // namespace chorus::testing

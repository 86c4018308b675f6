// Rendezvous roots are threads of the process that made the id, and that process may fork() later (a launcher
// starting its next set of ranks, a user's multiprocessing). fork() copies only the calling thread: a lock another
// thread held at that instant (inside malloc, and the sanitizers' allocators take no care of fork at all) stays
// held in the child forever, and the child hangs at its first allocation. So a root thread holds the fork gate while
// it works and lets go of it only while it sleeps in poll(); a fork() in this process first takes the gate (a
// pthread_atfork handler), waits until the threads of roots that have finished are gone from the kernel, and so
// copies the process while every root sleeps or is gone.
#pragma once

#include <poll.h>

#include <functional>

namespace chorus::bootstrap {

/// Runs `body` on a new root thread under the fork gate.
void startRootThread(std::function<void()> body);

/// In a root thread: poll() with the gate released, the one place a fork may copy the process while the thread
/// lives.
int pollOutsideForkGate(pollfd* fds, nfds_t count, int timeoutMs);

}  // namespace chorus::bootstrap

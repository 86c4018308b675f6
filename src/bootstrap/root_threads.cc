#include "bootstrap/root_threads.hpp"

#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <mutex>
#include <new>
#include <shared_mutex>
#include <string>
#include <thread>
#include <vector>

namespace chorus::bootstrap {
namespace {

struct Roots {
  std::shared_mutex gate;      // shared: a root at work; exclusive: a fork under way
  std::mutex mutex;            // guards `exiting`; taken after the gate, never before
  std::vector<pid_t> exiting;  // threads of roots done with their work and the gate, perhaps still ending
};

// Never destroyed: roots may still run while the process exits.
Roots& roots() {
  static Roots* r = new Roots;
  return *r;
}

bool threadExists(pid_t tid) {
  struct stat info;
  return stat(("/proc/self/task/" + std::to_string(tid)).c_str(), &info) == 0;
}

// A thread's end frees its state in the allocator; once the kernel has no such task, that is over. (The threads are
// detached: joining them would make every thread of a root that ended be waited for, or reported as leaked.)
void waitForExits(std::vector<pid_t>* tids) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(1);  // a tid reused meanwhile: give up
  for (pid_t tid : *tids)
    while (threadExists(tid) && std::chrono::steady_clock::now() < end) std::this_thread::yield();
  tids->clear();
}

void beforeFork() {
  Roots& r = roots();
  r.gate.lock();
  r.mutex.lock();
  waitForExits(&r.exiting);
}

void afterForkInParent() {
  roots().mutex.unlock();
  roots().gate.unlock();
}

// The child's one thread has a new id, and a shared_mutex knows its writer by thread id: an unlock here would be
// taken for a reader's and leave the gate shut to the child's own roots. The child has no roots (and none of the
// parent's threads), so it starts with fresh locks instead.
void afterForkInChild() {
  Roots& r = roots();
  new (&r.gate) std::shared_mutex;
  new (&r.mutex) std::mutex;
  r.exiting.clear();
}

}  // namespace

void startRootThread(std::function<void()> body) {
  static std::once_flag registered;
  std::call_once(registered, [] { pthread_atfork(beforeFork, afterForkInParent, afterForkInChild); });
  {
    // Forget the threads that have ended since.
    std::lock_guard<std::mutex> lock(roots().mutex);
    std::erase_if(roots().exiting, [](pid_t tid) { return !threadExists(tid); });
  }
  std::promise<void> underGate;
  std::future<void> started = underGate.get_future();
  std::thread([body = std::move(body), &underGate] {
    std::shared_lock<std::shared_mutex> working(roots().gate);
    underGate.set_value();
    body();
    std::lock_guard<std::mutex> lock(roots().mutex);
    roots().exiting.push_back(gettid());
  }).detach();
  // A thread's start, like its end, runs in the allocator outside the gate: the caller may fork once it is over.
  started.wait();
}

int pollOutsideForkGate(pollfd* fds, nfds_t count, int timeoutMs) {
  roots().gate.unlock_shared();
  const int ready = poll(fds, count, timeoutMs);
  roots().gate.lock_shared();
  return ready;
}

}  // namespace chorus::bootstrap

#include "bootstrap/root_threads.hpp"

#include <pthread.h>

#include <future>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <vector>

namespace chorus::bootstrap {
namespace {

struct Roots {
  std::shared_mutex gate;  // shared: a root at work; exclusive: a fork under way
  std::mutex mutex;        // guards the two below; taken after the gate, never before
  std::map<std::thread::id, std::thread> running;
  std::vector<std::thread> ended;  // done with their work and the gate, perhaps still exiting
};

// Never destroyed: roots may still run while the process exits.
Roots& roots() {
  static Roots* r = new Roots;
  return *r;
}

void beforeFork() {
  Roots& r = roots();
  r.gate.lock();
  r.mutex.lock();
  // A thread's exit frees its stack and its state in the allocator: joined, it is over.
  for (std::thread& t : r.ended) t.join();
  r.ended.clear();
}

void afterForkInParent() {
  roots().mutex.unlock();
  roots().gate.unlock();
}

void afterForkInChild() {
  Roots& r = roots();
  // The parent's roots do not exist here: their handles are neither joined nor destroyed (either would fail), only
  // forgotten.
  new std::map<std::thread::id, std::thread>(std::move(r.running));
  r.running.clear();
  r.mutex.unlock();
  r.gate.unlock();
}

void joinEnded() {
  std::vector<std::thread> ended;
  {
    std::lock_guard<std::mutex> lock(roots().mutex);
    ended.swap(roots().ended);
  }
  for (std::thread& t : ended) t.join();
}

}  // namespace

void startRootThread(std::function<void()> body) {
  static std::once_flag registered;
  std::call_once(registered, [] { pthread_atfork(beforeFork, afterForkInParent, afterForkInChild); });
  joinEnded();
  Roots& r = roots();
  std::promise<void> underGate;
  std::future<void> started = underGate.get_future();
  {
    // Held until the new thread is in `running`, where its end looks for it.
    std::lock_guard<std::mutex> lock(r.mutex);
    std::thread t([body = std::move(body), &underGate] {
      std::shared_lock<std::shared_mutex> working(roots().gate);
      underGate.set_value();
      body();
      std::lock_guard<std::mutex> lock(roots().mutex);
      auto self = roots().running.find(std::this_thread::get_id());
      roots().ended.push_back(std::move(self->second));
      roots().running.erase(self);
    });
    const std::thread::id id = t.get_id();
    r.running.emplace(id, std::move(t));
  }
  // A thread's start, like its exit, runs in the allocator outside the gate: the caller may fork once it is over.
  started.wait();
}

int pollOutsideForkGate(pollfd* fds, nfds_t count, int timeoutMs) {
  roots().gate.unlock_shared();
  const int ready = poll(fds, count, timeoutMs);
  roots().gate.lock_shared();
  return ready;
}

}  // namespace chorus::bootstrap

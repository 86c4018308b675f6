#include "observe/dump_on_signal.hpp"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <map>
#include <mutex>
#include <thread>

#include "core/log.hpp"
#include "observe/settings.hpp"

namespace chorus::observe {
namespace {

std::mutex gMutex;  // held while a dump runs, so forgetDumper() waits for it
std::map<const void*, std::function<void(const std::string&)>>& dumpers() {
  static auto* m = new std::map<const void*, std::function<void(const std::string&)>>;  // outlives static dtors
  return *m;
}
int gWake[2] = {-1, -1};  // the handler writes a byte here

void onSignal(int) {
  const int saved = errno;
  const char byte = 1;
  (void)!write(gWake[1], &byte, 1);  // async-signal-safe; a full pipe already holds a wake-up
  errno = saved;
}

void dumpLoop(std::string dir) {
  char byte;
  for (;;) {
    const ssize_t n = read(gWake[0], &byte, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    std::lock_guard<std::mutex> lock(gMutex);
    CHORUS_WARN(kInit, "SIGUSR1: writing the flight records of %zu communicator(s) to %s", dumpers().size(),
                dir.c_str());
    for (auto& [owner, dump] : dumpers()) dump(dir);
  }
}

// Once per process (under gMutex), when CHORUS_TRACE_DIR is set and the program left SIGUSR1 alone (its default
// action ends the process).
bool gInstalled = false;
void installHandler() {
  const std::string& dir = settings()[kTraceDir];
  if (gInstalled || dir.empty()) return;
  gInstalled = true;
  struct sigaction current {};
  if (sigaction(SIGUSR1, nullptr, &current) != 0 || current.sa_handler != SIG_DFL) return;
  if (pipe(gWake) != 0) return;
  struct sigaction action {};
  action.sa_handler = onSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  if (sigaction(SIGUSR1, &action, nullptr) != 0) return;
  std::thread(dumpLoop, dir).detach();
}

}  // namespace

void registerDumper(const void* owner, std::function<void(const std::string& dir)> dump) {
  std::lock_guard<std::mutex> lock(gMutex);
  installHandler();
  dumpers()[owner] = std::move(dump);
}

void forgetDumper(const void* owner) {
  std::lock_guard<std::mutex> lock(gMutex);
  dumpers().erase(owner);
}

}  // namespace chorus::observe

// SIGUSR1 writes the flight record of every live communicator of the process to CHORUS_TRACE_DIR, as PyTorch's
// flight recorder dumps on request. The handler only wakes a thread; the thread writes the files.
#pragma once

#include <functional>
#include <string>

namespace chorus::observe {

/// Registers `dump` (called with the directory) under `owner` until forgetDumper(owner). The first registration
/// installs the SIGUSR1 handler, when CHORUS_TRACE_DIR is set and the program has no handler of its own.
void registerDumper(const void* owner, std::function<void(const std::string& dir)> dump);
/// After it returns, `owner`'s dump is not running and will not run again.
void forgetDumper(const void* owner);

}  // namespace chorus::observe

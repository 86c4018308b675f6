// Looking up the functions of a library loaded with dlopen (UCX, libibverbs): each transport keeps a table of
// function pointers filled once, and the first missing name is the reason the transport is unavailable.
#pragma once

#include <dlfcn.h>

#include <string>

namespace chorus::transport {

/// Looks `name` up in `handle` into `*slot`; records the first failure in *failure ("<library> has no <name> ...").
template <typename F>
void findSymbol(void* handle, const char* library, const char* name, F* slot, std::string* failure) {
  *slot = reinterpret_cast<F>(dlsym(handle, name));
  if (!*slot && failure->empty()) *failure = std::string(library) + " has no " + name + " (" + dlerror() + ")";
}

}  // namespace chorus::transport

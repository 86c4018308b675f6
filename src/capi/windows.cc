// Windows (ncclCommWindowRegister): the host path reads buffers wherever they are, so a window records its range;
// it is the handle NCCL's programs pass around, give to the one-sided calls and back to ncclCommWindowDeregister.
// Registration is collective in NCCL, so every rank numbers its windows alike: a put names the target's window by
// that number, and the communicator's one-sided channel (if it has one) learns where each lies.
#include <mutex>
#include <string>

#include "capi/api_support.hpp"
#include "capi/nccl_comm.hpp"
#include "comm/comm_access.hpp"

using chorus::capi::report;

namespace {
// NCCL 2.28's symmetric flag and 2.29's ordering and GIN-only flags: hints for NCCL's device paths, recorded.
constexpr int kKnownFlags = NCCL_WIN_COLL_SYMMETRIC | NCCL_WIN_STRICT_ORDERING | NCCL_WIN_GIN_ONLY;
}  // namespace

extern "C" {

ncclResult_t pncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win, int winFlags) try {
  CHORUS_ENTER_SHARED(comm, "ncclCommWindowRegister");
  if (!win) return report(chorus::invalidArgument("ncclCommWindowRegister: win is NULL"));
  *win = nullptr;
  if (!buff && size > 0) return report(chorus::invalidArgument("ncclCommWindowRegister: buff is NULL"));
  if ((winFlags & ~kKnownFlags) != 0) {
    return report(chorus::invalidArgument("ncclCommWindowRegister: invalid winFlags " + std::to_string(winFlags)));
  }
  if ((winFlags & NCCL_WIN_COLL_SYMMETRIC) && reinterpret_cast<uintptr_t>(buff) % NCCL_WIN_REQUIRED_ALIGNMENT != 0) {
    return report(chorus::invalidArgument("ncclCommWindowRegister: a symmetric window must start at a multiple of " +
                                          std::to_string(NCCL_WIN_REQUIRED_ALIGNMENT) + " bytes"));
  }
  auto window = std::make_unique<ncclWindow_vidmem>();
  window->base = buff;
  window->size = size;
  window->flags = winFlags;
  std::lock_guard<std::mutex> lock(comm->mutex);
  window->id = comm->windowsRegistered++;
  if (chorus::OneSided* channel = chorus::CommAccess::impl(*comm->comm).oneSided())
    channel->addWindow(window->id, buff, size);
  *win = window.get();
  comm->windows.push_back(std::move(window));
  return ncclSuccess;
}
CHORUS_CATCH("ncclCommWindowRegister")

ncclResult_t pncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win) try {
  CHORUS_ENTER_SHARED(comm, "ncclCommWindowDeregister");
  std::lock_guard<std::mutex> lock(comm->mutex);
  for (auto it = comm->windows.begin(); it != comm->windows.end(); ++it) {
    if (it->get() == win) {
      if (chorus::OneSided* channel = chorus::CommAccess::impl(*comm->comm).oneSided()) channel->removeWindow(win->id);
      comm->windows.erase(it);
      return ncclSuccess;
    }
  }
  return report(chorus::invalidArgument("ncclCommWindowDeregister: win was not registered on this comm"));
}
CHORUS_CATCH("ncclCommWindowDeregister")

ncclResult_t pncclWinGetUserPtr(ncclComm_t comm, ncclWindow_t win, void** outUserPtr) try {
  CHORUS_ENTER_SHARED(comm, "ncclWinGetUserPtr");
  if (!outUserPtr) return report(chorus::invalidArgument("ncclWinGetUserPtr: outUserPtr is NULL"));
  std::lock_guard<std::mutex> lock(comm->mutex);
  for (const auto& w : comm->windows) {
    if (w.get() == win) {
      *outUserPtr = w->base;
      return ncclSuccess;
    }
  }
  return report(chorus::invalidArgument("ncclWinGetUserPtr: win was not registered on this comm"));
}
CHORUS_CATCH("ncclWinGetUserPtr")

CHORUS_NCCL_ALIAS(ncclCommWindowRegister)
CHORUS_NCCL_ALIAS(ncclCommWindowDeregister)
CHORUS_NCCL_ALIAS(ncclWinGetUserPtr)

}  // extern "C"

#include "transports/ucx/ucp_library.hpp"

#include <dlfcn.h>

#include <mutex>

#include "transports/dynamic_symbols.hpp"

namespace chorus::transport::ucx {
namespace {

UcpLibrary library;
std::string failure;  // why loading failed, empty when it worked

template <typename F>
void find(void* handle, const char* name, F* slot) {
  findSymbol(handle, "UCX", name, slot, &failure);
}

void load() {
  // The sonames of UCX 1.x; kept loaded for the life of the process (UCX cannot be unloaded cleanly).
  void* ucs = dlopen("libucs.so.0", RTLD_NOW | RTLD_GLOBAL);
  void* ucp = ucs ? dlopen("libucp.so.0", RTLD_NOW | RTLD_GLOBAL) : nullptr;
  if (!ucp) {
    failure = std::string("UCX cannot be loaded: ") + dlerror();
    return;
  }
  find(ucp, "ucp_config_read", &library.config_read);
  find(ucp, "ucp_config_release", &library.config_release);
  find(ucp, "ucp_init_version", &library.init_version);
  find(ucp, "ucp_cleanup", &library.cleanup);
  find(ucp, "ucp_worker_create", &library.worker_create);
  find(ucp, "ucp_worker_destroy", &library.worker_destroy);
  find(ucp, "ucp_worker_get_efd", &library.worker_get_efd);
  find(ucp, "ucp_worker_arm", &library.worker_arm);
  find(ucp, "ucp_worker_get_address", &library.worker_get_address);
  find(ucp, "ucp_worker_release_address", &library.worker_release_address);
  find(ucp, "ucp_worker_progress", &library.worker_progress);
  find(ucp, "ucp_request_check_status", &library.request_check_status);
  find(ucp, "ucp_request_free", &library.request_free);
  find(ucp, "ucp_request_cancel", &library.request_cancel);
  find(ucp, "ucp_ep_create", &library.ep_create);
  find(ucp, "ucp_ep_close_nbx", &library.ep_close_nbx);
  find(ucp, "ucp_ep_flush_nbx", &library.ep_flush_nbx);
  find(ucp, "ucp_stream_send_nbx", &library.stream_send_nbx);
  find(ucp, "ucp_stream_recv_data_nb", &library.stream_recv_data_nb);
  find(ucp, "ucp_stream_data_release", &library.stream_data_release);
  find(ucp, "ucp_tag_send_nbx", &library.tag_send_nbx);
  find(ucp, "ucp_tag_recv_nbx", &library.tag_recv_nbx);
  find(ucp, "ucp_tag_probe_nb", &library.tag_probe_nb);
  find(ucp, "ucp_ep_print_info", &library.ep_print_info);
  find(ucp, "ucp_tag_msg_recv_nbx", &library.tag_msg_recv_nbx);
  find(ucs, "ucs_status_string", &library.status_string);
}

}  // namespace

const UcpLibrary* loadUcp(std::string* why) {
  static std::once_flag once;
  std::call_once(once, load);
  *why = failure;
  return failure.empty() ? &library : nullptr;
}

const UcpLibrary& ucp() { return library; }

}  // namespace chorus::transport::ucx

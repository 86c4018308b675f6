#include "transports/ib/verbs_library.hpp"

#include <dlfcn.h>

#include <mutex>

#include "transports/dynamic_symbols.hpp"

namespace chorus::transport::ib {
namespace {

VerbsLibrary library;
std::string failure;  // why loading failed, empty when it worked

template <typename F>
void find(void* handle, const char* name, F* slot) {
  findSymbol(handle, "libibverbs", name, slot, &failure);
}

void load() {
  void* handle = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (!handle) {
    failure = std::string("libibverbs cannot be loaded (rdma-core): ") + dlerror();
    return;
  }
  find(handle, "ibv_get_device_list", &library.get_device_list);
  find(handle, "ibv_free_device_list", &library.free_device_list);
  find(handle, "ibv_get_device_name", &library.get_device_name);
  find(handle, "ibv_open_device", &library.open_device);
  find(handle, "ibv_close_device", &library.close_device);
  find(handle, "ibv_query_port", &library.query_port);
  find(handle, "ibv_query_gid", &library.query_gid);
  find(handle, "ibv_alloc_pd", &library.alloc_pd);
  find(handle, "ibv_dealloc_pd", &library.dealloc_pd);
  find(handle, "ibv_reg_mr", &library.reg_mr);
  find(handle, "ibv_dereg_mr", &library.dereg_mr);
  find(handle, "ibv_create_cq", &library.create_cq);
  find(handle, "ibv_destroy_cq", &library.destroy_cq);
  find(handle, "ibv_create_qp", &library.create_qp);
  find(handle, "ibv_destroy_qp", &library.destroy_qp);
  find(handle, "ibv_modify_qp", &library.modify_qp);
  find(handle, "ibv_wc_status_str", &library.wc_status_str);
}

}  // namespace

const VerbsLibrary* loadVerbs(std::string* why) {
  static std::once_flag once;
  std::call_once(once, load);
  *why = failure;
  return failure.empty() ? &library : nullptr;
}

const VerbsLibrary& verbs() { return library; }

}  // namespace chorus::transport::ib

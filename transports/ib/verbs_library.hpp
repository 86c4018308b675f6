// libibverbs is loaded when the ib transport is first asked for, not linked: chorus then runs on machines without
// rdma-core, and a program that never uses InfiniBand never loads it. ibv_post_send, ibv_post_recv and ibv_poll_cq
// are inline calls through the device context and need no lookup.
#pragma once

#include <infiniband/verbs.h>

#include <string>

namespace chorus::transport::ib {

struct VerbsLibrary {
  decltype(&::ibv_get_device_list) get_device_list;
  decltype(&::ibv_free_device_list) free_device_list;
  decltype(&::ibv_get_device_name) get_device_name;
  decltype(&::ibv_open_device) open_device;
  decltype(&::ibv_close_device) close_device;
  decltype(&::ibv_query_port) query_port;
  decltype(&::ibv_query_gid) query_gid;
  decltype(&::ibv_alloc_pd) alloc_pd;
  decltype(&::ibv_dealloc_pd) dealloc_pd;
  decltype(&::ibv_reg_mr) reg_mr;
  decltype(&::ibv_dereg_mr) dereg_mr;
  decltype(&::ibv_create_cq) create_cq;
  decltype(&::ibv_destroy_cq) destroy_cq;
  decltype(&::ibv_create_qp) create_qp;
  decltype(&::ibv_destroy_qp) destroy_qp;
  decltype(&::ibv_modify_qp) modify_qp;
  decltype(&::ibv_wc_status_str) wc_status_str;
};

/// libibverbs, loaded on the first call; null when it cannot be, with the reason in *why.
const VerbsLibrary* loadVerbs(std::string* why);
/// The loaded library; only after loadVerbs() succeeded.
const VerbsLibrary& verbs();

}  // namespace chorus::transport::ib

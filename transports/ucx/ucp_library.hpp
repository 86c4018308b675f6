// UCX is loaded when the ucx transport opens, not when chorus is: UCX's libraries install signal handlers and memory
// hooks from their constructors, which a program that never uses UCX (most of chorus's users) must not get. The
// functions the transport calls are looked up once, by name.
#pragma once

#include <ucp/api/ucp.h>

#include <string>

namespace chorus::transport::ucx {

struct UcpLibrary {
  decltype(&::ucp_config_read) config_read;
  decltype(&::ucp_config_release) config_release;
  decltype(&::ucp_init_version) init_version;
  decltype(&::ucp_cleanup) cleanup;
  decltype(&::ucp_worker_create) worker_create;
  decltype(&::ucp_worker_destroy) worker_destroy;
  decltype(&::ucp_worker_get_efd) worker_get_efd;
  decltype(&::ucp_worker_arm) worker_arm;
  decltype(&::ucp_worker_get_address) worker_get_address;
  decltype(&::ucp_worker_release_address) worker_release_address;
  decltype(&::ucp_worker_progress) worker_progress;
  decltype(&::ucp_request_check_status) request_check_status;
  decltype(&::ucp_request_free) request_free;
  decltype(&::ucp_request_cancel) request_cancel;
  decltype(&::ucp_ep_create) ep_create;
  decltype(&::ucp_ep_close_nbx) ep_close_nbx;
  decltype(&::ucp_ep_flush_nbx) ep_flush_nbx;
  decltype(&::ucp_stream_send_nbx) stream_send_nbx;
  decltype(&::ucp_stream_recv_data_nb) stream_recv_data_nb;
  decltype(&::ucp_stream_data_release) stream_data_release;
  decltype(&::ucp_tag_send_nbx) tag_send_nbx;
  decltype(&::ucp_tag_recv_nbx) tag_recv_nbx;
  decltype(&::ucp_tag_probe_nb) tag_probe_nb;
  decltype(&::ucp_ep_print_info) ep_print_info;
  decltype(&::ucp_tag_msg_recv_nbx) tag_msg_recv_nbx;
  decltype(&::ucs_status_string) status_string;
};

/// UCX's libraries, loaded on the first call; null when they cannot be, with the reason in *why.
const UcpLibrary* loadUcp(std::string* why);
/// The loaded library; only after loadUcp() succeeded.
const UcpLibrary& ucp();

}  // namespace chorus::transport::ucx

// The one registry of settings. Every knob chorus reads from the environment is declared once, in settings.cc: its
// name, NCCL alias, default, documentation and the field it fills; it is parsed once and leaf code reads the typed
// fields below.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace chorus {

// Every field's default is its setting's documented default (settings.cc), parsed like any value; a
// default-constructed Settings is all zero.
struct Settings {
  std::string debug;                // CHORUS_DEBUG / NCCL_DEBUG
  std::string debugSubsys;          // CHORUS_DEBUG_SUBSYS / NCCL_DEBUG_SUBSYS
  std::string debugFile;            // CHORUS_DEBUG_FILE / NCCL_DEBUG_FILE
  double timeoutSeconds = 0;        // CHORUS_TIMEOUT
  std::string transport;            // CHORUS_TRANSPORT (lower case)
  std::string commId;               // CHORUS_COMM_ID / NCCL_COMM_ID
  std::string commSecret;           // CHORUS_COMM_SECRET
  std::string hostId;               // CHORUS_HOST_ID / NCCL_HOSTID
  int64_t shmBufferBytes = 0;       // CHORUS_SHM_BUFFER (0: auto)
  int64_t tcpBufferBytes = 0;       // CHORUS_TCP_BUFFER
  int64_t loopbackBufferBytes = 0;  // CHORUS_LOOPBACK_BUFFER
  int64_t tcpSockets = 0;           // CHORUS_TCP_SOCKETS
  std::string tcpCongestion;        // CHORUS_TCP_CONGESTION
  std::string socketIfAddr;         // CHORUS_SOCKET_ADDR
  std::string ibHca;                // CHORUS_IB_HCA / NCCL_IB_HCA
  int64_t ibGidIndex = 0;           // CHORUS_IB_GID_INDEX / NCCL_IB_GID_INDEX (-1: by link layer)
  int64_t ibBufferBytes = 0;        // CHORUS_IB_BUFFER
  int64_t spinIterations = 0;       // CHORUS_SPIN (0: auto)
  int64_t directThreshold = 0;      // CHORUS_DIRECT_THRESHOLD (0: direct transfers off; -1: each transport's own)
  bool shmCma = false;              // CHORUS_SHM_CMA
  int64_t coldStreaming = 0;        // CHORUS_COLD_STREAMING (0: off)
  int64_t cachedStreaming = 0;      // CHORUS_CACHED_STREAMING
  bool farStreaming = true;         // CHORUS_FAR_STREAMING
  std::string algorithm;            // CHORUS_ALGO
  bool deterministic = false;       // CHORUS_DETERMINISTIC
  bool checkCalls = false;          // CHORUS_CHECK_CALLS
  std::string topoFile;             // CHORUS_TOPO_FILE / NCCL_TOPO_FILE
  std::string ncclAlgo;             // NCCL_ALGO (read when CHORUS_ALGO is unset)
  std::string tuningFile;           // CHORUS_TUNING_FILE
  int64_t traceEntries = 0;         // CHORUS_TRACE_ENTRIES (0: no flight recorder)
  double heartbeatPeriod = 0;       // CHORUS_HEARTBEAT_PERIOD (0: no heartbeat)
  double heartbeatTimeout = 0;      // CHORUS_HEARTBEAT_TIMEOUT (0: 4 periods)
  std::string traceDir;             // CHORUS_TRACE_DIR
  bool gpuPeerMemory = false;       // CHORUS_GPU_PEER_MEMORY
  int64_t gpuSlotBytes = 0;         // CHORUS_GPU_SLOT
  int64_t gpuOneShotBytes = 0;      // CHORUS_GPU_ONE_SHOT
  int64_t gpuOneKernelMax = 0;      // CHORUS_GPU_ONE_KERNEL (bytes)

  /// Whether connections may offer direct transfers at all (CHORUS_DIRECT_THRESHOLD is not 0).
  bool directTransfersOn() const { return directThreshold != 0; }
};

/// One documented setting, for chorus-info and the README.
struct SettingDoc {
  const char* name;
  const char* alias;  // NCCL name honoured too, or ""
  const char* defaultValue;
  const char* doc;
};

/// A byte count: digits with an optional K, M or G (binary) suffix ("1M" = 1048576); false for anything else, a
/// negative value or an overflow.
bool parseByteSize(const char* text, int64_t* out);

/// The settings of this process, parsed from the environment on first use.
const Settings& settings();
/// Re-reads the environment (tests change variables between cases).
void reloadSettings();
/// The first invalid value found ("CHORUS_TIMEOUT='abc' is invalid: ..."), empty when every value parsed. Invalid
/// values fall back to their defaults in settings(); communicator init fails with this message.
std::string settingsError();
const std::vector<SettingDoc>& settingDocs();
/// The raw environment value of a setting (its own name first, then the NCCL alias); empty when unset.
std::string rawSettingValue(const SettingDoc& doc);

}  // namespace chorus

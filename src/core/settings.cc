#include "core/settings.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <mutex>
#include <string>
#include <vector>

namespace chorus {
namespace {

const std::vector<SettingDoc> kDocs = {
    {"CHORUS_DEBUG", "NCCL_DEBUG", "", "log level: WARN, INFO or TRACE"},
    {"CHORUS_DEBUG_SUBSYS", "NCCL_DEBUG_SUBSYS", "ALL", "comma list of INIT,COLL,BOOTSTRAP,TRANSPORT,ENGINE"},
    {"CHORUS_DEBUG_FILE", "NCCL_DEBUG_FILE", "", "log to this file instead of stderr (%h host, %p pid)"},
    {"CHORUS_TIMEOUT", "", "300", "seconds any wait may last before it fails with a timeout error"},
    {"CHORUS_TRANSPORT", "", "", "force one transport for every peer (chorus-info lists the registered ones)"},
    {"CHORUS_COMM_ID", "NCCL_COMM_ID", "", "host:port of the rendezvous root for the environment launchers"},
    {"CHORUS_COMM_SECRET", "", "",
     "a per-job secret (any text, the same on every rank) for rendezvous by address (CHORUS_COMM_ID, torchrun's "
     "MASTER_ADDR): without it the address alone admits anyone who can reach it"},
    {"CHORUS_HOST_ID", "NCCL_HOSTID", "", "host identity override (default hostname + boot id)"},
    {"CHORUS_SHM_BUFFER", "", "4194304", "bytes of each shared-memory FIFO (one per direction per peer)"},
    {"CHORUS_TCP_BUFFER", "", "4194304", "bytes of each tcp staging FIFO (one per direction per peer)"},
    {"CHORUS_LOOPBACK_BUFFER", "", "4194304", "bytes of each in-process FIFO"},
    {"CHORUS_TCP_SOCKETS", "", "2",
     "stream sockets per tcp peer (the stream is striped across them); one more carries direct transfers"},
    {"CHORUS_TCP_CONGESTION", "", "auto",
     "congestion control of tcp data sockets (e.g. cubic, bbr; system: leave the default); auto: reno between ranks "
     "of one host, where the path is the loopback device and pacing only delays, the system default elsewhere"},
    {"CHORUS_SOCKET_ADDR", "", "", "IPv4 address to listen on and advertise (default: first non-loopback)"},
    {"CHORUS_IB_HCA", "NCCL_IB_HCA", "",
     "RDMA ports the ib transport may use: mlx5_0:1,mlx5_1 (prefixes; '=' exact names, '^' excludes); default all"},
    {"CHORUS_IB_GID_INDEX", "NCCL_IB_GID_INDEX", "",
     "GID index of the ib transport's port (unset: 3, RoCE v2 over IPv4, on RoCE; 0 on InfiniBand)"},
    {"CHORUS_IB_BUFFER", "", "4194304", "bytes of each ib staging FIFO and ring (one each per direction per peer)"},
    {"CHORUS_DIRECT_THRESHOLD", "", "",
     "transfers of this many bytes per step are copied once, straight from the sender's buffer; 0 = off "
     "(unset: each transport's own, 256 KiB)"},
    {"CHORUS_SHM_CMA", "", "0", "1: single-copy transfers between processes too (process_vm_readv)"},
    {"CHORUS_ALGO", "", "",
     "force or exclude algorithms: [^][collective:]name[@lo-hi], comma separated (e.g. allreduce:ring@1M-)"},
    {"NCCL_ALGO", "", "", "read when CHORUS_ALGO is unset: Ring -> ring, Tree -> the log-depth algorithms"},
    {"CHORUS_DETERMINISTIC", "", "0",
     "1: AllReduce, ReduceScatter and Reduce fold every element in rank order, so results do not depend on the "
     "algorithm or the message size (Communicator::setDeterministic per communicator)"},
    {"CHORUS_CHECK_CALLS", "", "1",
     "1: every call's first message to each peer carries its sequence number and a digest of its arguments, and a "
     "mismatch fails the call on both sides; must be the same on every rank"},
    {"CHORUS_TUNING_FILE", "", "", "alpha/beta table written by chorus-tune for the algorithm selector"},
    {"CHORUS_TOPO_FILE", "NCCL_TOPO_FILE", "",
     "this host's topology from a file (chorus, NCCL or hwloc XML) instead of hwloc discovery"},
    {"CHORUS_TRACE_ENTRIES", "", "2000",
     "operations each communicator's flight recorder keeps (0: none); chorus-trace reads their dumps"},
    {"CHORUS_TRACE_DIR", "", "",
     "where flight records are written on a timeout, a failure, an abort and SIGUSR1 (one file per communicator "
     "and rank); unset: only on request (Communicator::dumpFlightRecord)"},
    {"CHORUS_HEARTBEAT_PERIOD", "", "0",
     "seconds between a rank's heartbeats through the rendezvous store (0: no heartbeat detector)"},
    {"CHORUS_HEARTBEAT_TIMEOUT", "", "auto",
     "seconds without a heartbeat after which a rank is reported dead, stopped or cut off (auto: 4 periods)"},
    {"CHORUS_GPU_PEER_MEMORY", "", "1",
     "1: calls on device buffers among ranks of one host run on the GPU, through each other's device memory (CUDA "
     "IPC); 0: they are staged through pinned host memory and run on the host path"},
    {"CHORUS_GPU_SLOT", "", "67108864",
     "bytes of each of the two device-memory slots a rank's peers read from (a call moves at most this much per "
     "step)"},
    {"CHORUS_GPU_ONE_SHOT", "", "1048576",
     "device AllReduce up to this many bytes: every rank reduces the whole buffer after one barrier (above it, each "
     "reduces its share and then copies the others')"},
    {"CHORUS_GPU_ONE_KERNEL", "", "4194304",
     "a device call of one step that moves at most this many bytes per rank runs as one kernel, its barrier inside "
     "it (0: never; above it, copy and reduction kernels with the barriers as stream memory operations between)"},
    {"CHORUS_SPIN", "", "auto",
     "polls before a waiting rank yields its core (auto: 20000, or 16 when ranks outnumber cores)"},
};

const char* lookup(const char* name, const char* alias) {
  if (const char* v = getenv(name)) return v;
  if (alias && *alias) return getenv(alias);
  return nullptr;
}

// Errors found while parsing; the first one fails the next communicator init (settingsError()).
thread_local std::string* tErrors = nullptr;

void reject(const char* name, const char* value, const char* accepted) {
  if (tErrors && tErrors->empty()) *tErrors = std::string(name) + "='" + value + "' is invalid: " + accepted;
}

std::string str(const char* name, const char* alias, const char* def) {
  const char* v = lookup(name, alias);
  return v ? v : def;
}

// `minimum` excludes values below it (0 for settings where 0 means "off").
int64_t integer(const char* name, int64_t def, int64_t minimum = 1, const char* alias = nullptr) {
  const char* v = lookup(name, alias);
  if (!v || !*v) return def;
  int64_t x = 0;
  if (!parseByteSize(v, &x) || x < minimum) {
    // NCCL's own name keeps NCCL's behaviour (an invalid value is ignored there): only chorus's names are strict.
    if (!getenv(name)) return def;
    reject(name, v,
           minimum > 0 ? "a positive integer, with an optional K, M or G suffix"
                       : "a non-negative integer, with an optional K, M or G suffix");
    return def;
  }
  return x;
}

bool boolean(const char* name, bool def) {
  const char* v = lookup(name, nullptr);
  if (!v || !*v) return def;
  std::string t = v;
  for (auto& c : t) c = static_cast<char>(tolower(c));
  if (t == "1" || t == "true" || t == "yes" || t == "on") return true;
  if (t == "0" || t == "false" || t == "no" || t == "off") return false;
  reject(name, v, "0 or 1 (also true/false, yes/no, on/off)");
  return def;
}

double seconds(const char* name, double def) {
  const char* v = lookup(name, nullptr);
  if (!v || !*v) return def;
  char* end = nullptr;
  double x = strtod(v, &end);
  if (end == v || *end != '\0' || !(x > 0)) {
    reject(name, v, "a positive number of seconds (e.g. 300 or 0.5)");
    return def;
  }
  return x;
}

std::string oneOf(const char* name, const char* alias, const char* def, std::initializer_list<const char*> allowed,
                  const char* accepted) {
  std::string v = str(name, alias, def);
  if (v.empty()) return v;
  std::string upper = v, lower = v;
  for (auto& c : upper) c = static_cast<char>(toupper(c));
  for (auto& c : lower) c = static_cast<char>(tolower(c));
  for (const char* a : allowed)
    if (upper == a || lower == a) return v;
  // NCCL's own name keeps NCCL's behaviour (an unknown value is ignored there): only chorus's names are strict.
  if (getenv(name)) reject(name, v.c_str(), accepted);
  return "";
}

Settings parse(std::string* errors) {
  tErrors = errors;
  Settings s;
  s.debug = oneOf("CHORUS_DEBUG", "NCCL_DEBUG", "", {"VERSION", "WARN", "INFO", "TRACE", "ABORT"},
                  "one of WARN, INFO, TRACE (VERSION and ABORT as in NCCL)");
  s.debugSubsys = str("CHORUS_DEBUG_SUBSYS", "NCCL_DEBUG_SUBSYS", "");
  s.debugFile = str("CHORUS_DEBUG_FILE", "NCCL_DEBUG_FILE", "");
  s.timeoutSeconds = seconds("CHORUS_TIMEOUT", 300.0);
  // Checked against the registered transports when a communicator connects (transports/peer_mesh.hpp).
  s.transport = str("CHORUS_TRANSPORT", "", "");
  for (auto& c : s.transport) c = static_cast<char>(tolower(c));
  s.commId = str("CHORUS_COMM_ID", "NCCL_COMM_ID", "");
  s.commSecret = str("CHORUS_COMM_SECRET", "", "");
  s.hostId = str("CHORUS_HOST_ID", "NCCL_HOSTID", "");
  s.shmBufferBytes = integer("CHORUS_SHM_BUFFER", 4 << 20);
  s.tcpBufferBytes = integer("CHORUS_TCP_BUFFER", 4 << 20);
  s.loopbackBufferBytes = integer("CHORUS_LOOPBACK_BUFFER", 4 << 20);
  s.tcpSockets = integer("CHORUS_TCP_SOCKETS", 2);
  s.tcpCongestion = str("CHORUS_TCP_CONGESTION", "", "auto");
  s.socketIfAddr = str("CHORUS_SOCKET_ADDR", "", "");
  s.ibHca = str("CHORUS_IB_HCA", "NCCL_IB_HCA", "");
  s.ibGidIndex = integer("CHORUS_IB_GID_INDEX", -1, 0, "NCCL_IB_GID_INDEX");
  s.ibBufferBytes = integer("CHORUS_IB_BUFFER", 4 << 20);
  if (const char* v = getenv("CHORUS_SPIN"); !v || std::string(v) != "auto")
    s.spinIterations = integer("CHORUS_SPIN", 0);
  s.directThreshold = integer("CHORUS_DIRECT_THRESHOLD", -1, 0);  // 0: direct transfers off; -1: the transport's
  s.shmCma = boolean("CHORUS_SHM_CMA", false);
  s.algorithm = str("CHORUS_ALGO", "", "");
  s.deterministic = boolean("CHORUS_DETERMINISTIC", false);
  s.checkCalls = boolean("CHORUS_CHECK_CALLS", true);
  s.topoFile = str("CHORUS_TOPO_FILE", "NCCL_TOPO_FILE", "");
  s.ncclAlgo = str("NCCL_ALGO", "", "");
  s.tuningFile = str("CHORUS_TUNING_FILE", "", "");
  s.traceEntries = integer("CHORUS_TRACE_ENTRIES", 2000, 0);
  if (s.traceEntries > (1 << 20)) {  // 88 bytes each, per communicator
    reject("CHORUS_TRACE_ENTRIES", std::to_string(s.traceEntries).c_str(), "at most 1048576 entries");
    s.traceEntries = 2000;
  }
  s.traceDir = str("CHORUS_TRACE_DIR", "", "");
  s.gpuPeerMemory = boolean("CHORUS_GPU_PEER_MEMORY", true);
  const Settings defaults;  // the GPU sizes' defaults live in settings.hpp only
  s.gpuSlotBytes = integer("CHORUS_GPU_SLOT", defaults.gpuSlotBytes);
  if (s.gpuSlotBytes < 4096) {
    reject("CHORUS_GPU_SLOT", std::to_string(s.gpuSlotBytes).c_str(), "at least 4096 bytes");
    s.gpuSlotBytes = defaults.gpuSlotBytes;
  }
  s.gpuOneShotBytes = integer("CHORUS_GPU_ONE_SHOT", defaults.gpuOneShotBytes, 0);
  s.gpuOneKernelMax = integer("CHORUS_GPU_ONE_KERNEL", defaults.gpuOneKernelMax, 0);
  if (const char* v = getenv("CHORUS_HEARTBEAT_PERIOD"); v && std::string(v) != "0")
    s.heartbeatPeriod = seconds("CHORUS_HEARTBEAT_PERIOD", 0);
  if (const char* v = getenv("CHORUS_HEARTBEAT_TIMEOUT"); v && std::string(v) != "auto")
    s.heartbeatTimeout = seconds("CHORUS_HEARTBEAT_TIMEOUT", 0);
  tErrors = nullptr;
  return s;
}

std::mutex gMutex;
std::atomic<Settings*> gSettings{nullptr};
std::string gError;  // under gMutex

}  // namespace

bool parseByteSize(const char* text, int64_t* out) {
  char* end = nullptr;
  errno = 0;
  long long x = strtoll(text, &end, 10);
  if (end == text || x < 0 || errno != 0) return false;
  int shift = 0;
  if (*end == 'K' || *end == 'k')
    shift = 10, ++end;
  else if (*end == 'M' || *end == 'm')
    shift = 20, ++end;
  else if (*end == 'G' || *end == 'g')
    shift = 30, ++end;
  if (*end != '\0' || x > (INT64_MAX >> shift)) return false;
  *out = static_cast<int64_t>(x) << shift;
  return true;
}

const Settings& settings() {
  // Read on every collective: lock-free once parsed.
  if (Settings* s = gSettings.load(std::memory_order_acquire)) return *s;
  std::lock_guard<std::mutex> lock(gMutex);
  if (!gSettings.load()) gSettings.store(new Settings(parse(&gError)), std::memory_order_release);
  return *gSettings.load();
}

void reloadSettings() {
  std::lock_guard<std::mutex> lock(gMutex);
  // The old object is kept for the life of the process: other threads may still hold references to it.
  static auto* retired = new std::vector<Settings*>();
  if (Settings* old = gSettings.load()) retired->push_back(old);
  gError.clear();
  gSettings.store(new Settings(parse(&gError)), std::memory_order_release);
}

std::string settingsError() {
  (void)settings();
  std::lock_guard<std::mutex> lock(gMutex);
  return gError;
}

const std::vector<SettingDoc>& settingDocs() { return kDocs; }

std::string rawSettingValue(const SettingDoc& doc) {
  const char* v = lookup(doc.name, doc.alias);
  return v ? v : "";
}

}  // namespace chorus

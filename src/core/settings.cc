#include "core/settings.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>

namespace chorus {
namespace {

const std::vector<SettingDoc> kDocs = {
    {"CHORUS_DEBUG", "NCCL_DEBUG", "", "log level: WARN, INFO or TRACE"},
    {"CHORUS_DEBUG_SUBSYS", "NCCL_DEBUG_SUBSYS", "ALL", "comma list of INIT,COLL,BOOTSTRAP,TRANSPORT,ENGINE"},
    {"CHORUS_DEBUG_FILE", "NCCL_DEBUG_FILE", "", "log to this file instead of stderr (%h host, %p pid)"},
    {"CHORUS_TIMEOUT", "", "300", "seconds any wait may last before it fails with a timeout error"},
    {"CHORUS_TRANSPORT", "", "", "force one transport for every peer: loopback, shm or tcp"},
    {"CHORUS_COMM_ID", "NCCL_COMM_ID", "", "host:port of the rendezvous root for the environment launchers"},
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
    {"CHORUS_DIRECT_THRESHOLD", "", "262144",
     "transfers of this many bytes per step are copied once, straight from the sender's buffer; 0 = off"},
    {"CHORUS_SHM_CMA", "", "0", "1: single-copy transfers between processes too (process_vm_readv)"},
    {"CHORUS_ALGO", "", "",
     "force or exclude algorithms: [^][collective:]name[@lo-hi], comma separated (e.g. allreduce:ring@1M-)"},
    {"NCCL_ALGO", "", "", "read when CHORUS_ALGO is unset: Ring -> ring, Tree -> the log-depth algorithms"},
    {"CHORUS_DETERMINISTIC", "", "0",
     "1: AllReduce, ReduceScatter and Reduce fold every element in rank order, so results do not depend on the "
     "algorithm or the message size (Communicator::setDeterministic per communicator)"},
    {"CHORUS_TUNING_FILE", "", "", "alpha/beta table written by chorus-tune for the algorithm selector"},
    {"CHORUS_TOPO_FILE", "NCCL_TOPO_FILE", "",
     "this host's topology from a file (chorus, NCCL or hwloc XML) instead of hwloc discovery"},
    {"CHORUS_SPIN", "", "auto",
     "polls before a waiting rank yields its core (auto: 20000, or 16 when ranks outnumber cores)"},
};

const char* lookup(const char* name, const char* alias) {
  if (const char* v = getenv(name)) return v;
  if (alias && *alias) return getenv(alias);
  return nullptr;
}

std::string str(const char* name, const char* alias, const char* def) {
  const char* v = lookup(name, alias);
  return v ? v : def;
}

int64_t integer(const char* name, int64_t def) {
  const char* v = lookup(name, nullptr);
  if (!v || !*v) return def;
  char* end = nullptr;
  long long x = strtoll(v, &end, 0);
  if (end && (*end == 'K' || *end == 'k')) x <<= 10;
  if (end && (*end == 'M' || *end == 'm')) x <<= 20;
  return x > 0 ? x : def;
}

Settings parse() {
  Settings s;
  s.debug = str("CHORUS_DEBUG", "NCCL_DEBUG", "");
  s.debugSubsys = str("CHORUS_DEBUG_SUBSYS", "NCCL_DEBUG_SUBSYS", "");
  s.debugFile = str("CHORUS_DEBUG_FILE", "NCCL_DEBUG_FILE", "");
  const char* t = lookup("CHORUS_TIMEOUT", nullptr);
  s.timeoutSeconds = (t && atof(t) > 0) ? atof(t) : 300.0;
  s.transport = str("CHORUS_TRANSPORT", "", "");
  s.commId = str("CHORUS_COMM_ID", "NCCL_COMM_ID", "");
  s.hostId = str("CHORUS_HOST_ID", "NCCL_HOSTID", "");
  s.shmBufferBytes = integer("CHORUS_SHM_BUFFER", 4 << 20);
  s.tcpBufferBytes = integer("CHORUS_TCP_BUFFER", 4 << 20);
  s.loopbackBufferBytes = integer("CHORUS_LOOPBACK_BUFFER", 4 << 20);
  s.tcpSockets = integer("CHORUS_TCP_SOCKETS", 2);
  s.tcpCongestion = str("CHORUS_TCP_CONGESTION", "", "auto");
  s.socketIfAddr = str("CHORUS_SOCKET_ADDR", "", "");
  s.spinIterations = integer("CHORUS_SPIN", 0);
  // 0 is a valid value here (direct transfers off), so this one is not read with integer().
  const char* direct = lookup("CHORUS_DIRECT_THRESHOLD", nullptr);
  s.directThreshold = direct && *direct ? std::max<int64_t>(0, strtoll(direct, nullptr, 0)) : int64_t{256} << 10;
  s.shmCma = integer("CHORUS_SHM_CMA", 0) > 0;
  s.algorithm = str("CHORUS_ALGO", "", "");
  s.deterministic = integer("CHORUS_DETERMINISTIC", 0) > 0;
  s.topoFile = str("CHORUS_TOPO_FILE", "NCCL_TOPO_FILE", "");
  s.ncclAlgo = str("NCCL_ALGO", "", "");
  s.tuningFile = str("CHORUS_TUNING_FILE", "", "");
  return s;
}

std::mutex gMutex;
std::atomic<Settings*> gSettings{nullptr};

}  // namespace

const Settings& settings() {
  // Read on every collective: lock-free once parsed.
  if (Settings* s = gSettings.load(std::memory_order_acquire)) return *s;
  std::lock_guard<std::mutex> lock(gMutex);
  if (!gSettings.load()) gSettings.store(new Settings(parse()), std::memory_order_release);
  return *gSettings.load();
}

void reloadSettings() {
  std::lock_guard<std::mutex> lock(gMutex);
  // The old object is leaked on purpose: other threads may still hold references to it.
  gSettings.store(new Settings(parse()), std::memory_order_release);
}

const std::vector<SettingDoc>& settingDocs() { return kDocs; }

std::string rawSettingValue(const SettingDoc& doc) {
  const char* v = lookup(doc.name, doc.alias);
  return v ? v : "";
}

}  // namespace chorus

#include "core/settings.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace chorus {
namespace {

// How a setting's text becomes its field: false when the text is not a value of the setting.
using Parser = std::function<bool(const std::string& text, Settings& s)>;

// One setting, declared once: its names, its default as text (what chorus-info and the README print), its
// documentation, what it accepts (for the error message) and the field it fills. The default goes through the same
// parser as any value, so the documented default and the one in effect cannot disagree.
struct Setting {
  SettingDoc doc;
  const char* accepted;
  Parser parse;
};

// A special word (like "auto") that stands for a value outside the setting's range.
struct Word {
  const char* text;
  int64_t value;
};

Parser text(std::string Settings::*field) {
  return [field](const std::string& t, Settings& s) {
    s.*field = t;
    return true;
  };
}

Parser lowerText(std::string Settings::*field) {
  return [field](const std::string& t, Settings& s) {
    s.*field = t;
    for (auto& c : s.*field) c = static_cast<char>(tolower(c));
    return true;
  };
}

// A byte count or count (K, M, G suffixes) in [minimum, maximum], or `word`.
Parser bytes(int64_t Settings::*field, int64_t minimum, int64_t maximum = INT64_MAX, Word word = {nullptr, 0}) {
  return [=](const std::string& t, Settings& s) {
    if (word.text && t == word.text) {
      s.*field = word.value;
      return true;
    }
    int64_t x = 0;
    if (t.empty() || !parseByteSize(t.c_str(), &x) || x < minimum || x > maximum) return false;
    s.*field = x;
    return true;
  };
}

Parser boolean(bool Settings::*field) {
  return [field](const std::string& t, Settings& s) {
    std::string lower = t;
    for (auto& c : lower) c = static_cast<char>(tolower(c));
    if (lower == "1" || lower == "true" || lower == "yes" || lower == "on") return (s.*field = true), true;
    if (lower == "0" || lower == "false" || lower == "no" || lower == "off") return (s.*field = false), true;
    return false;
  };
}

// A positive number of seconds, or `word`, which stands for 0 (off, or the setting's automatic value).
Parser seconds(double Settings::*field, const char* word = nullptr) {
  return [=](const std::string& t, Settings& s) {
    if (word && t == word) return (s.*field = 0), true;
    char* end = nullptr;
    double x = strtod(t.c_str(), &end);
    if (t.empty() || *end != '\0' || !(x > 0)) return false;
    s.*field = x;
    return true;
  };
}

// One of `allowed` in any case (kept as given), or empty.
Parser oneOf(std::string Settings::*field, std::vector<std::string> allowed) {
  return [=](const std::string& t, Settings& s) {
    std::string upper = t;
    for (auto& c : upper) c = static_cast<char>(toupper(c));
    if (!t.empty() && std::find(allowed.begin(), allowed.end(), upper) == allowed.end()) return false;
    s.*field = t;
    return true;
  };
}

constexpr const char* kAnyText = "any text";
constexpr const char* kPositive = "a positive integer, with an optional K, M or G suffix";
constexpr const char* kNonNegative = "a non-negative integer, with an optional K, M or G suffix";
constexpr const char* kBoolean = "0 or 1 (also true/false, yes/no, on/off)";
constexpr const char* kSeconds = "a positive number of seconds (e.g. 300 or 0.5)";

const std::vector<Setting>& registry() {
  static const std::vector<Setting> kSettings = {
      {{"CHORUS_DEBUG", "NCCL_DEBUG", "",
        "log level: WARN, INFO or TRACE; lines carry host, pid, thread and rank. INFO: the version, each "
        "peer's transport and why, the topology; with the COLL subsystem one line per call (operation, sequence, "
        "count, type, op, root, algorithm, bytes, time)"},
       "one of WARN, INFO, TRACE (VERSION and ABORT as in NCCL)",
       oneOf(&Settings::debug, {"VERSION", "WARN", "INFO", "TRACE", "ABORT"})},
      {{"CHORUS_DEBUG_SUBSYS", "NCCL_DEBUG_SUBSYS", "ALL", "comma list of INIT,COLL,BOOTSTRAP,TRANSPORT,ENGINE"},
       kAnyText,
       text(&Settings::debugSubsys)},
      {{"CHORUS_DEBUG_FILE", "NCCL_DEBUG_FILE", "",
        "log to this file instead of stderr (%h host, %p pid, %r rank: one file per rank, also "
        "for ranks in one process)"},
       kAnyText,
       text(&Settings::debugFile)},
      {{"CHORUS_TIMEOUT", "", "300", "seconds any wait may last before it fails with a timeout error"},
       kSeconds,
       seconds(&Settings::timeoutSeconds)},
      // Checked against the registered transports when a communicator connects (transports/peer_mesh.hpp).
      {{"CHORUS_TRANSPORT", "", "",
        "force one transport for every peer (loopback, shm, tcp, and ucx, ib where built; chorus-info "
        "lists them); an unknown name is an error listing them, a forced one that cannot reach a peer says why"},
       kAnyText,
       lowerText(&Settings::transport)},
      {{"CHORUS_COMM_ID", "NCCL_COMM_ID", "", "host:port of the rendezvous root for the environment launchers"},
       kAnyText,
       text(&Settings::commId)},
      {{"CHORUS_COMM_SECRET", "", "",
        "a per-job secret (any text, the same on every rank) for rendezvous by address (CHORUS_COMM_ID, torchrun's "
        "MASTER_ADDR): without it the address alone admits anyone who can reach it"},
       kAnyText,
       text(&Settings::commSecret)},
      {{"CHORUS_HOST_ID", "NCCL_HOSTID", "", "host identity override (default hostname + boot id)"},
       kAnyText,
       text(&Settings::hostId)},
      {{"CHORUS_SHM_BUFFER", "", "auto",
        "bytes of each shared-memory FIFO (one per direction per peer; auto: 4 MiB, or 1 MiB when ranks outnumber "
        "cores)"},
       "auto or a positive integer, with an optional K, M or G suffix",
       bytes(&Settings::shmBufferBytes, 1, INT64_MAX, {"auto", 0})},
      {{"CHORUS_TCP_BUFFER", "", "4194304", "bytes of each tcp staging FIFO (one per direction per peer)"},
       kPositive,
       bytes(&Settings::tcpBufferBytes, 1)},
      {{"CHORUS_LOOPBACK_BUFFER", "", "4194304", "bytes of each in-process FIFO"},
       kPositive,
       bytes(&Settings::loopbackBufferBytes, 1)},
      {{"CHORUS_TCP_SOCKETS", "", "2",
        "stream sockets per tcp peer (the stream is striped across them); one more carries direct transfers"},
       kPositive,
       bytes(&Settings::tcpSockets, 1)},
      {{"CHORUS_TCP_CONGESTION", "", "auto",
        "congestion control of tcp data sockets (e.g. cubic, bbr; system: leave the default); auto: reno between "
        "ranks of one host, where the path is the loopback device and pacing only delays, the system default "
        "elsewhere"},
       kAnyText,
       text(&Settings::tcpCongestion)},
      {{"CHORUS_SOCKET_ADDR", "", "", "IPv4 address to listen on and advertise (default: first non-loopback)"},
       kAnyText,
       text(&Settings::socketIfAddr)},
      {{"CHORUS_IB_HCA", "NCCL_IB_HCA", "",
        "RDMA ports the ib transport may use: mlx5_0:1,mlx5_1 (prefixes; '=' exact names, '^' excludes); default "
        "all"},
       kAnyText,
       text(&Settings::ibHca)},
      {{"CHORUS_IB_GID_INDEX", "NCCL_IB_GID_INDEX", "",
        "GID index of the ib transport's port (unset: 3, RoCE v2 over IPv4, on RoCE; 0 on InfiniBand)"},
       kNonNegative,
       bytes(&Settings::ibGidIndex, 0, INT64_MAX, {"", -1})},
      {{"CHORUS_IB_BUFFER", "", "4194304", "bytes of each ib staging FIFO and ring (one each per direction per peer)"},
       kPositive,
       bytes(&Settings::ibBufferBytes, 1)},
      {{"CHORUS_DIRECT_THRESHOLD", "", "",
        "transfers of this many bytes per step are copied once, straight from the sender's buffer; 0 = off "
        "(unset: each transport's own, 256 KiB; transfers a plan staged for several peers from 32 KiB)"},
       kNonNegative,
       bytes(&Settings::directThreshold, 0, INT64_MAX, {"", -1})},
      {{"CHORUS_COLD_STREAMING", "", "65536",
        "steps of at least this many bytes into a receive buffer not written lately (judged from the buffers of a "
        "communicator's last calls) are written with streaming stores; 0 = off (every buffer taken as cached: "
        "streaming from CHORUS_CACHED_STREAMING)"},
       kNonNegative,
       bytes(&Settings::coldStreaming, 0)},
      {{"CHORUS_CACHED_STREAMING", "", "4194304",
        "steps of at least this many bytes into a receive buffer judged still in the cache are written with "
        "streaming stores"},
       kPositive,
       bytes(&Settings::cachedStreaming, 1)},
      {{"CHORUS_FAR_STREAMING", "", "1",
        "1: a sender whose plain copies into a peer's shared-memory FIFO (timed from 16 KiB) run below 7 GB/s three "
        "times in a row (the cores far apart) writes its pieces of 16 KiB and more there with streaming stores for the "
        "next 20 ms"},
       kBoolean,
       boolean(&Settings::farStreaming)},
      {{"CHORUS_SHM_CMA", "", "0", "1: single-copy transfers between processes too (process_vm_readv)"},
       kBoolean,
       boolean(&Settings::shmCma)},
      {{"CHORUS_ALGO", "", "",
        "force or exclude algorithms: [^][collective:]name[@lo-hi], comma separated (e.g. allreduce:ring@1M-)"},
       kAnyText,
       text(&Settings::algorithm)},
      {{"NCCL_ALGO", "", "", "read when CHORUS_ALGO is unset: Ring -> ring, Tree -> the log-depth algorithms"},
       kAnyText,
       text(&Settings::ncclAlgo)},
      {{"CHORUS_DETERMINISTIC", "", "0",
        "1: AllReduce, ReduceScatter and Reduce fold every element in rank order, so results do not depend on the "
        "algorithm or the message size (Communicator::setDeterministic per communicator)"},
       kBoolean,
       boolean(&Settings::deterministic)},
      {{"CHORUS_CHECK_CALLS", "", "1",
        "1: every call's first message to each peer carries its sequence number and a digest of its arguments, and "
        "a mismatch fails the call on both sides; must be the same on every rank"},
       kBoolean,
       boolean(&Settings::checkCalls)},
      {{"CHORUS_TUNING_FILE", "", "",
        "alpha/beta table and measured choices written by chorus-tune for the algorithm selector"},
       kAnyText,
       text(&Settings::tuningFile)},
      {{"CHORUS_TOPO_FILE", "NCCL_TOPO_FILE", "",
        "this host's topology from a file (chorus, NCCL or hwloc XML) instead of hwloc discovery"},
       kAnyText,
       text(&Settings::topoFile)},
      // 88 bytes an entry, per communicator.
      {{"CHORUS_TRACE_ENTRIES", "", "2000",
        "operations each communicator's flight recorder keeps (at most 1048576, 88 bytes each; 0: none, "
        "and with it the clock reads and the metrics' times); chorus-trace reads their dumps"},
       "an integer from 0 to 1048576",
       bytes(&Settings::traceEntries, 0, 1 << 20)},
      {{"CHORUS_TRACE_DIR", "", "",
        "where flight records are written on a timeout, a failure, an abort and SIGUSR1 (one file per "
        "communicator and rank); unset: only on request (Communicator::dumpFlightRecord)"},
       kAnyText,
       text(&Settings::traceDir)},
      {{"CHORUS_HEARTBEAT_PERIOD", "", "0",
        "seconds between a rank's heartbeats through the rendezvous store (0: no heartbeat detector)"},
       "0 or a positive number of seconds (e.g. 5 or 0.5)",
       seconds(&Settings::heartbeatPeriod, "0")},
      {{"CHORUS_HEARTBEAT_TIMEOUT", "", "auto",
        "seconds without a heartbeat after which a rank is reported dead, stopped or cut off (auto: 4 periods)"},
       "auto or a positive number of seconds (e.g. 20 or 0.5)",
       seconds(&Settings::heartbeatTimeout, "auto")},
      {{"CHORUS_GPU_PEER_MEMORY", "", "1",
        "1: calls on device buffers among ranks of one host run on the GPU, through each other's device memory "
        "(CUDA IPC); 0: they are staged through pinned host memory and run on the host path"},
       kBoolean,
       boolean(&Settings::gpuPeerMemory)},
      {{"CHORUS_GPU_SLOT", "", "67108864",
        "bytes of each of the two device-memory slots a rank's peers read from (a call moves at most this much per "
        "step)"},
       "an integer of at least 4096, with an optional K, M or G suffix",
       bytes(&Settings::gpuSlotBytes, 4096)},
      {{"CHORUS_GPU_ONE_SHOT", "", "1048576",
        "device AllReduce up to this many bytes: every rank reduces the whole buffer after one barrier (above it, "
        "each reduces its share and then copies the others')"},
       kNonNegative,
       bytes(&Settings::gpuOneShotBytes, 0)},
      {{"CHORUS_GPU_ONE_KERNEL", "", "4194304",
        "a device call of one step that moves at most this many bytes per rank runs as one kernel, its barrier "
        "inside it (0: never; above it, copy and reduction kernels with the barriers as stream memory operations "
        "between)"},
       kNonNegative,
       bytes(&Settings::gpuOneKernelMax, 0)},
      {{"CHORUS_SPIN", "", "auto",
        "polls before a waiting rank yields its core (auto: 20000, or 16 when ranks outnumber cores)"},
       "auto or a positive integer",
       bytes(&Settings::spinIterations, 1, INT64_MAX, {"auto", 0})},
  };
  return kSettings;
}

const char* lookup(const char* name, const char* alias) {
  if (const char* v = getenv(name)) return v;
  if (alias && *alias) return getenv(alias);
  return nullptr;
}

// Every setting at its default, then at its value from the environment. An invalid value keeps the default and,
// under chorus's own name, is reported in `errors` (the first one); NCCL's own names keep NCCL's leniency, where an
// invalid value is ignored.
Settings parse(std::string* errors) {
  Settings s;
  auto reject = [&](const std::string& message) {
    if (errors->empty()) *errors = message;
  };
  for (const Setting& setting : registry()) {
    const SettingDoc& doc = setting.doc;
    if (!setting.parse(doc.defaultValue, s))
      reject(std::string("internal error: the default of ") + doc.name + ", '" + doc.defaultValue +
             "', is not a value it takes");
    const char* v = lookup(doc.name, doc.alias);
    if (!v || !*v) continue;
    Settings candidate = s;  // a failed parse leaves the default in place
    if (setting.parse(v, candidate)) {
      s = std::move(candidate);
    } else if (getenv(doc.name)) {
      reject(std::string(doc.name) + "='" + v + "' is invalid: " + setting.accepted);
    }
  }
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

const std::vector<SettingDoc>& settingDocs() {
  static const std::vector<SettingDoc> docs = [] {
    std::vector<SettingDoc> out;
    for (const Setting& setting : registry()) out.push_back(setting.doc);
    return out;
  }();
  return docs;
}

std::string rawSettingValue(const SettingDoc& doc) {
  const char* v = lookup(doc.name, doc.alias);
  return v ? v : "";
}

}  // namespace chorus

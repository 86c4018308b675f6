#include "core/log.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include "core/setting_parsers.hpp"

namespace chorus::log {
namespace {

using namespace setting_parsers;

const Setting<std::string> kDebug{
    {"CHORUS_DEBUG", "NCCL_DEBUG", "",
     "log level: WARN, INFO or TRACE; lines carry host, pid, thread and rank. INFO: the version, each peer's transport "
     "and why, the topology; with the COLL subsystem one line per call (operation, sequence, count, type, op, root, "
     "algorithm, bytes, time)"},
    "one of WARN, INFO, TRACE (VERSION and ABORT as in NCCL)",
    SettingScope::kProcess,
    oneOf({"VERSION", "WARN", "INFO", "TRACE", "ABORT"})};
const Setting<std::string> kDebugSubsys{
    {"CHORUS_DEBUG_SUBSYS", "NCCL_DEBUG_SUBSYS", "ALL", "comma list of INIT,COLL,BOOTSTRAP,TRANSPORT,ENGINE"},
    kAnyText,
    SettingScope::kProcess,
    text()};
const Setting<std::string> kDebugFile{
    {"CHORUS_DEBUG_FILE", "NCCL_DEBUG_FILE", "",
     "log to this file instead of stderr (%h host, %p pid, %r rank: one file per rank, also for ranks in one "
     "process)"},
    kAnyText,
    SettingScope::kProcess,
    text()};

// Set on every call (RankScope).
thread_local int tCurrentRank = -1;

struct Sink {
  Level level = Level::kNone;
  unsigned subsysMask = kAll;
  std::string host;
  std::string pattern;         // CHORUS_DEBUG_FILE, empty for stderr
  pid_t filesPid = 0;          // the process the open files belong to (a forked rank opens its own)
  std::map<int, FILE*> files;  // by rank when the pattern has %r, else one entry
  std::mutex mutex;

  Sink() { configure(); }

  void configure() {
    const Settings& s = settings();
    level = Level::kNone;
    subsysMask = kAll;
    std::string lv = s[kDebug];
    for (auto& c : lv) c = static_cast<char>(toupper(c));
    if (lv == "WARN")
      level = Level::kWarn;
    else if (lv == "INFO")
      level = Level::kInfo;
    else if (lv == "TRACE")
      level = Level::kTrace;
    if (!s[kDebugSubsys].empty()) subsysMask = parseSubsys(s[kDebugSubsys]);
    char name[256] = {0};
    gethostname(name, sizeof(name) - 1);
    host = name;
    if (auto dot = host.find('.'); dot != std::string::npos) host.resize(dot);
    closeFiles();
    pattern = s[kDebugFile];
  }

  void closeFiles() {
    // Files opened by a parent before fork() are the parent's: a child only forgets them.
    for (auto& [rank, f] : files)
      if (filesPid == getpid()) fclose(f);
    files.clear();
  }

  // The file of this line: CHORUS_DEBUG_FILE with %h host, %p pid and %r rank expanded (NCCL_DEBUG_FILE's %h and
  // %p), opened on first use in each process; stderr when unset or when it cannot be opened.
  FILE* fileFor(int rank) {
    if (pattern.empty()) return stderr;
    if (filesPid != getpid()) {
      closeFiles();
      filesPid = getpid();
    }
    const bool perRank = pattern.find("%r") != std::string::npos;
    const int key = perRank ? rank : 0;
    if (auto it = files.find(key); it != files.end()) return it->second;
    std::string path;
    for (size_t i = 0; i < pattern.size(); ++i) {
      if (pattern[i] == '%' && i + 1 < pattern.size()) {
        char c = pattern[++i];
        if (c == 'h')
          path += host;
        else if (c == 'p')
          path += std::to_string(getpid());
        else if (c == 'r')
          path += std::to_string(rank);
        else
          path += c;
      } else {
        path += pattern[i];
      }
    }
    FILE* f = fopen(path.c_str(), "a");
    files[key] = f ? f : stderr;
    return files[key];
  }

  static unsigned parseSubsys(const std::string& text) {
    unsigned mask = 0;
    size_t start = 0;
    while (start <= text.size()) {
      size_t end = text.find(',', start);
      std::string item = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
      for (auto& c : item) c = static_cast<char>(toupper(c));
      if (item == "INIT")
        mask |= kInit;
      else if (item == "COLL")
        mask |= kColl;
      else if (item == "BOOTSTRAP")
        mask |= kBootstrap;
      else if (item == "NET" || item == "TRANSPORT" || item == "SHM")
        mask |= kTransport;
      else if (item == "ENGINE")
        mask |= kEngine;
      else if (item == "ALL")
        mask |= kAll;
      if (end == std::string::npos) break;
      start = end + 1;
    }
    return mask;
  }
};

Sink& sink() {
  // Never destroyed: a root thread of the bootstrap may still log while the process runs its exit handlers.
  static Sink* s = new Sink;
  return *s;
}

const char* levelName(Level level) {
  switch (level) {
    case Level::kWarn:
      return "WARN";
    case Level::kInfo:
      return "INFO";
    case Level::kTrace:
      return "TRACE";
    default:
      return "";
  }
}

}  // namespace

bool enabled(Level level, Subsys subsys) {
  const Sink& s = sink();
  return level <= s.level && (s.subsysMask & subsys) != 0;
}

void write(Level level, Subsys, const char* fmt, ...) {
  Sink& s = sink();
  char body[2048];
  va_list args;
  va_start(args, fmt);
  vsnprintf(body, sizeof(body), fmt, args);
  va_end(args);
  std::lock_guard<std::mutex> lock(s.mutex);
  FILE* file = s.fileFor(tCurrentRank);
  fprintf(file, "%s:%d:%d [%d] chorus %s %s\n", s.host.c_str(), getpid(), static_cast<int>(gettid()), tCurrentRank,
          levelName(level), body);
  fflush(file);
}

void reinitialize() {
  Sink& s = sink();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.configure();
}

RankScope::RankScope(int rank) : previous_(tCurrentRank) { tCurrentRank = rank; }
RankScope::~RankScope() { tCurrentRank = previous_; }

}  // namespace chorus::log

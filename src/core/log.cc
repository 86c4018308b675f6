#include "core/log.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>

#include "core/settings.hpp"

namespace chorus::log {
namespace {

// Set on every call (RankScope): initial-exec, so setting it costs one store instead of a TLS lookup call.
[[gnu::tls_model("initial-exec")]] thread_local int tCurrentRank = -1;

struct Sink {
  Level level = Level::kNone;
  unsigned subsysMask = kAll;
  FILE* file = stderr;
  std::string host;
  std::mutex mutex;

  Sink() { configure(); }

  void configure() {
    const Settings& s = settings();
    level = Level::kNone;
    subsysMask = kAll;
    std::string lv = s.debug;
    for (auto& c : lv) c = static_cast<char>(toupper(c));
    if (lv == "WARN")
      level = Level::kWarn;
    else if (lv == "INFO")
      level = Level::kInfo;
    else if (lv == "TRACE")
      level = Level::kTrace;
    if (!s.debugSubsys.empty()) subsysMask = parseSubsys(s.debugSubsys);
    char name[256] = {0};
    gethostname(name, sizeof(name) - 1);
    host = name;
    if (auto dot = host.find('.'); dot != std::string::npos) host.resize(dot);
    if (!s.debugFile.empty()) {
      // %h and %p expand to host and pid, as NCCL_DEBUG_FILE does.
      std::string path;
      for (size_t i = 0; i < s.debugFile.size(); ++i) {
        if (s.debugFile[i] == '%' && i + 1 < s.debugFile.size()) {
          char c = s.debugFile[++i];
          if (c == 'h')
            path += host;
          else if (c == 'p')
            path += std::to_string(getpid());
          else
            path += c;
        } else {
          path += s.debugFile[i];
        }
      }
      if (FILE* f = fopen(path.c_str(), "a")) file = f;
    }
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
  static Sink s;
  return s;
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
  fprintf(s.file, "%s:%d:%d [%d] chorus %s %s\n", s.host.c_str(), getpid(), static_cast<int>(gettid()), tCurrentRank,
          levelName(level), body);
  fflush(s.file);
}

void reinitialize() {
  Sink& s = sink();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.configure();
}

RankScope::RankScope(int rank) : previous_(tCurrentRank) { tCurrentRank = rank; }
RankScope::~RankScope() { tCurrentRank = previous_; }

}  // namespace chorus::log

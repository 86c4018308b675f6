#include "observe/flight_dump.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "algorithms/plan.hpp"
#include "bootstrap/host_id.hpp"
#include "chorus/types.hpp"
#include "observe/clock.hpp"

namespace chorus::observe {
namespace {

// JSON string contents: quotes, backslashes and control characters escaped.
std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char esc[8];
      snprintf(esc, sizeof(esc), "\\u%04x", c);
      out += esc;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

// Wall-clock nanoseconds of a tick, or 0 for a tick never taken.
long long wall(uint64_t tick) { return tick ? static_cast<long long>(wallNanoseconds(tick)) : 0; }

// The cost model's time, or null where the algorithm has no cost function (Send/Recv).
std::string predicted(float micros) {
  if (!std::isfinite(micros)) return "null";
  char text[32];
  snprintf(text, sizeof(text), "%.3f", static_cast<double>(micros));
  return text;
}

std::string entryJson(const FlightEntry& e) {
  char line[768];
  snprintf(line, sizeof(line),
           "{\"seq\": %" PRIu64 ", \"group_index\": %u, \"group_size\": %u, \"collective\": %s, \"count\": %" PRIu64
           ", \"dtype\": %s, \"op\": %s, \"root\": %d, \"payload_bytes\": %" PRIu64 ", \"wire_bytes\": %" PRIu64
           ", \"algorithm\": %s, \"predicted_us\": %s, \"state\": \"%s\", \"scheduled_ns\": %lld, \"started_ns\": "
           "%lld, \"ended_ns\": %lld}",
           e.sequence, e.groupIndex, e.groupSize,
           quoted(algo::collName(static_cast<algo::CollType>(e.collective))).c_str(), e.count,
           quoted(dataTypeName(static_cast<DataType>(e.dtype))).c_str(),
           quoted(redOpName(static_cast<RedOpKind>(e.op))).c_str(), e.root, e.payloadBytes, e.wireBytes,
           quoted(e.algorithm ? e.algorithm : "").c_str(), predicted(e.predictedMicros).c_str(), opStateName(e.state),
           wall(e.scheduledTick), wall(e.startedTick), wall(e.endedTick));
  return line;
}

}  // namespace

std::string flightRecordPath(const std::string& dir, uint64_t commHash, int rank) {
  char name[80];
  snprintf(name, sizeof(name), "/chorus-trace-%016" PRIx64 "-rank%d.json", commHash, rank);
  return dir + name;
}

Status writeFlightRecord(const std::string& dir, const FlightRecord& r, std::string* path) {
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
    return systemError("flight record: cannot create directory " + dir + ": " + strerror(errno));
  std::string text = "{\"format\": \"chorus-flight-record/1\", ";
  char head[256];
  snprintf(head, sizeof(head), "\"comm\": \"%016" PRIx64 "\", \"rank\": %d, \"size\": %d, \"pid\": %d, ", r.commHash,
           r.rank, r.size, static_cast<int>(getpid()));
  text += head;
  text += "\"host\": " + quoted(bootstrap::hostId()) + ", \"reason\": " + quoted(r.reason) +
          ", \"error\": " + quoted(r.error) + ", ";
  snprintf(head, sizeof(head), "\"written_ns\": %lld, \"in_flight_seq\": %" PRIu64 ", \"in_flight_peers\": [",
           static_cast<long long>(wallNanoseconds(ticks())), r.inFlightSequence);
  text += head;
  for (size_t i = 0; i < r.inFlight.size(); ++i) {
    const PeerBytes& p = r.inFlight[i];
    snprintf(head, sizeof(head),
             "%s{\"peer\": %d, \"sent\": %" PRIu64 ", \"to_send\": %" PRIu64 ", \"received\": %" PRIu64
             ", \"to_receive\": %" PRIu64 ", \"peer_started\": %s}",
             i ? ", " : "", p.peer, p.sent, p.toSend, p.received, p.toReceive, p.peerStarted ? "true" : "false");
    text += head;
  }
  text += "],\n\"entries\": [\n";
  for (size_t i = 0; i < r.entries.size(); ++i) text += (i ? ",\n" : "") + entryJson(r.entries[i]);
  text += "\n]}\n";

  const std::string final = flightRecordPath(dir, r.commHash, r.rank);
  const std::string partial = final + ".partial";
  FILE* f = fopen(partial.c_str(), "w");
  if (!f) return systemError("flight record: cannot write " + partial + ": " + strerror(errno));
  const bool written = fwrite(text.data(), 1, text.size(), f) == text.size();
  const bool closed = fclose(f) == 0;
  if (!written || !closed || rename(partial.c_str(), final.c_str()) != 0) {
    unlink(partial.c_str());
    return systemError("flight record: cannot write " + final + " (disk full?)");
  }
  if (path) *path = final;
  return Status::ok();
}

}  // namespace chorus::observe

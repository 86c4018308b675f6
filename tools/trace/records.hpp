// Flight records as chorus writes them (src/observe/flight_dump.cc), read back for chorus-trace.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace chorus::trace {

struct Entry {
  uint64_t seq = 0;
  int groupIndex = 0, groupSize = 1;
  std::string collective, dtype, op, algorithm, state;
  uint64_t count = 0;
  int root = 0;
  double predictedMicros = 0;
  int64_t scheduledNs = 0, startedNs = 0, endedNs = 0;
};

struct PeerBytes {
  int peer = 0;
  uint64_t sent = 0, toSend = 0, received = 0, toReceive = 0;
  bool peerStarted = true;
};

struct Record {
  std::string file, comm, host, reason, error;
  int rank = 0, size = 0, pid = 0;
  uint64_t inFlightSeq = 0;
  std::vector<PeerBytes> inFlight;
  std::vector<Entry> entries;  // in recording order
};

/// The records of every *.json flight record in `dir`, by communicator and rank; unreadable files are named in
/// *problems and skipped.
std::map<std::string, std::map<int, Record>> loadRecords(const std::string& dir, std::vector<std::string>* problems);

}  // namespace chorus::trace

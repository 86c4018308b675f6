// Writes a communicator's flight record as one JSON file per rank, the input of chorus-trace.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "chorus/status.hpp"
#include "observe/flight_recorder.hpp"

namespace chorus::observe {

/// Bytes this rank had exchanged with one peer in the call under way when the record was written.
struct PeerBytes {
  int peer;
  uint64_t sent, toSend, received, toReceive;
  bool peerStarted;  // the peer's side of the call had begun (its call header had arrived)
};

struct FlightRecord {
  uint64_t commHash = 0;  // the same on every rank of the communicator
  int rank = 0;
  int size = 0;
  std::string reason;  // why it was written: "timeout", "failure", "SIGUSR1", "request", "abort"
  std::string error;   // the communicator's first failure, if any
  uint64_t inFlightSequence = 0;
  std::vector<PeerBytes> inFlight;  // known when written by the thread that ran the failed call
  std::vector<FlightEntry> entries;
};

/// The file of `rank` of communicator `commHash` in `dir`.
std::string flightRecordPath(const std::string& dir, uint64_t commHash, int rank);
/// Writes `record` to flightRecordPath (atomically: a reader never sees half a file); *path receives it.
Status writeFlightRecord(const std::string& dir, const FlightRecord& record, std::string* path);

}  // namespace chorus::observe

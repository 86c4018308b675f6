// nccl-tests' JSON report (-J FILE.json, format version 3): the run's settings, devices, every result row with its
// per-iteration statistics (-I), and the footer's checks. Written by the printing rank at the end of the run.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "perf/iteration_stats.hpp"

namespace chorus::perf {

struct Options;

/// One half (out of place or in place) of a table row.
struct ReportHalf {
  double timeUs = 0, algBw = 0, busBw = 0;
  double wrong = -1;  // -1: unchecked (null in the report)
  bool perIteration = false;
  IterationStats stats;
  std::vector<double> timesUs;  // every sample, skipped ones included
};

struct ReportRow {
  size_t bytes = 0, count = 0;
  std::string type, redop;
  int root = -1;
  int iterations = 0;  // timed launches per half (-n times -m)
  std::string experiment;
  ReportHalf outOfPlace, inPlace;
};

struct ReportDevice {
  int rank = 0, pid = 0;
  std::string host, info;
};

struct Report {
  std::string library;  // the preamble's first line
  int ncclVersion = 0;  // ncclGetVersion() of the library measured; 0 when it has none
  std::string startTime, endTime;
  std::vector<ReportDevice> devices;
  std::vector<ReportRow> rows;
  double wrongCells = 0;
  double averageBusBw = 0;
  std::vector<std::string> errors;
};

/// Writes `report` to `path`, or, when that file exists, to path.0, path.1, ... (as nccl-tests does).
/// Returns the name written, or an empty string after printing why it could not be written.
std::string writeJsonReport(const std::string& path, const Options& options, const Report& report);

/// "2026-11-24 10:31:07", local time.
std::string timestampNow();

}  // namespace chorus::perf

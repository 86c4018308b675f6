#include "tools/trace/records.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

namespace chorus::trace {

namespace {

Record parse(const nlohmann::json& j) {
  Record r;
  r.comm = j.at("comm").get<std::string>();
  r.rank = j.at("rank").get<int>();
  r.size = j.at("size").get<int>();
  // A record is read from files anyone may have written: numbers that index ranks are checked before any use.
  constexpr int kMostRanks = 1 << 20;
  if (r.size < 1 || r.size > kMostRanks)
    throw std::runtime_error("size " + std::to_string(r.size) + " is no rank count");
  if (r.rank < 0 || r.rank >= r.size) {
    throw std::runtime_error("rank " + std::to_string(r.rank) + " is outside the communicator's " +
                             std::to_string(r.size) + " ranks");
  }
  r.pid = j.value("pid", 0);
  r.host = j.value("host", "");
  r.reason = j.value("reason", "");
  r.error = j.value("error", "");
  r.inFlightSeq = j.value("in_flight_seq", uint64_t{0});
  for (const auto& p : j.value("in_flight_peers", nlohmann::json::array()))
    r.inFlight.push_back({p.at("peer").get<int>(), p.at("sent").get<uint64_t>(), p.at("to_send").get<uint64_t>(),
                          p.at("received").get<uint64_t>(), p.at("to_receive").get<uint64_t>(),
                          p.value("peer_started", true)});
  for (const auto& peer : r.inFlight)
    if (peer.peer < 0 || peer.peer >= r.size)
      throw std::runtime_error("in-flight peer " + std::to_string(peer.peer) + " is outside the communicator");
  for (const auto& e : j.at("entries")) {
    Entry x;
    x.seq = e.at("seq").get<uint64_t>();
    x.groupIndex = e.value("group_index", 0);
    x.groupSize = e.value("group_size", 1);
    x.collective = e.at("collective").get<std::string>();
    x.count = e.at("count").get<uint64_t>();
    x.dtype = e.value("dtype", "");
    x.op = e.value("op", "");
    x.root = e.value("root", 0);
    x.algorithm = e.value("algorithm", "");
    x.predictedMicros = e.value("predicted_us", 0.0);
    x.state = e.at("state").get<std::string>();
    x.scheduledNs = e.value("scheduled_ns", int64_t{0});
    x.startedNs = e.value("started_ns", int64_t{0});
    x.endedNs = e.value("ended_ns", int64_t{0});
    r.entries.push_back(std::move(x));
  }
  return r;
}

}  // namespace

std::map<std::string, std::map<int, Record>> loadRecords(const std::string& dir, std::vector<std::string>* problems) {
  std::map<std::string, std::map<int, Record>> out;
  std::error_code ec;
  // In name order, so that which of two conflicting records is kept does not depend on the directory's order.
  std::vector<std::filesystem::directory_entry> files;
  for (const auto& file : std::filesystem::directory_iterator(dir, ec)) files.push_back(file);
  std::sort(files.begin(), files.end());
  for (const auto& file : files) {
    if (file.path().extension() != ".json") continue;
    std::ifstream in(file.path());
    try {
      const nlohmann::json j = nlohmann::json::parse(in);
      if (j.value("format", "") != "chorus-flight-record/1") continue;  // some other JSON file
      Record r = parse(j);
      r.file = file.path().string();
      auto& ranks = out[r.comm];
      if (!ranks.empty() && ranks.begin()->second.size != r.size) {
        throw std::runtime_error("it gives communicator " + r.comm + " " + std::to_string(r.size) + " ranks, " +
                                 ranks.begin()->second.file + " " + std::to_string(ranks.begin()->second.size));
      }
      if (ranks.count(r.rank))
        throw std::runtime_error("a second record of rank " + std::to_string(r.rank) +
                                 " (the first: " + ranks[r.rank].file + ")");
      ranks[r.rank] = std::move(r);
    } catch (const std::exception& e) {
      problems->push_back(file.path().string() + ": " + e.what());
    }
  }
  if (ec) problems->push_back(dir + ": " + ec.message());
  return out;
}

}  // namespace chorus::trace

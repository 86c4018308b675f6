// What a communicator keeps of its calls: the traffic counters, the flight recorder's entries (and the record it
// writes), the metrics' times and the COLL log lines.
#include <array>
#include <cstdio>

#include "comm/comm_impl.hpp"
#include "core/log.hpp"
#include "observe/clock.hpp"

namespace chorus {

Status CommImpl::dumpFlightRecord(const std::string& dir, const std::string& reason, std::string* path,
                                  std::vector<observe::PeerBytes> inFlight) const {
  observe::FlightRecord r;
  r.commHash = commHash_;
  r.rank = rank_;
  r.size = nranks_;
  r.reason = reason;
  if (failed_.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock(failureMutex_);
    r.error = failure_.message();
  }
  r.inFlight = std::move(inFlight);
  r.entries = recorder_.snapshot();
  if (!r.inFlight.empty() && !r.entries.empty()) r.inFlightSequence = r.entries.back().sequence;
  std::string written;
  Status st = observe::writeFlightRecord(dir, r, &written);
  if (st.isOk())
    CHORUS_WARN(kInit, "rank %d: flight record (%s) written to %s", rank_, reason.c_str(), written.c_str());
  if (path) *path = written;
  return st;
}

// Every call adds to one metrics cell (its collective and algorithm): summed by collective, the cells are the
// traffic counters, and a call counts once.
TrafficCounters CommImpl::counters() const {
  std::array<observe::MetricsTable::Totals, static_cast<size_t>(algo::CollType::kRecv) + 1> sums{};  // per CollType
  metrics_.totals(sums);
  auto read = [&sums](algo::CollType t) {
    const observe::MetricsTable::Totals& sum = sums[static_cast<size_t>(t)];
    return CallCounters{sum.calls, sum.payload, sum.wire};
  };
  using algo::CollType;
  TrafficCounters t;
  t.allReduce = read(CollType::kAllReduce);
  t.reduceScatter = read(CollType::kReduceScatter);
  t.allGather = read(CollType::kAllGather);
  t.alltoAll = read(CollType::kAlltoAll);
  t.alltoAllv = read(CollType::kAlltoAllv);
  t.broadcast = read(CollType::kBroadcast);
  t.reduce = read(CollType::kReduce);
  t.gather = read(CollType::kGather);
  t.scatter = read(CollType::kScatter);
  t.send = read(CollType::kSend);
  t.recv = read(CollType::kRecv);
  return t;
}

void CommImpl::noteCall(const Operation& op, const Dispatcher::Choice& choice) {
  RecordedCall& c = calls_.emplace_back();
  c.metrics = choice.metrics;
  c.predictedNanoseconds = observe::MetricsTable::predictedNanoseconds(choice.predictedMicros);
  observe::FlightEntry& e = c.entry;
  e.sequence = dispatcher_.sequence();
  e.count = op.count;
  e.payloadBytes = choice.payload;
  e.wireBytes = choice.wire;
  e.collective = static_cast<uint8_t>(op.type);
  e.dtype = static_cast<uint8_t>(op.dtype);
  e.op = static_cast<uint8_t>(op.op.kind);
  e.root = op.root;
  e.predictedMicros = choice.predictedMicros;
  e.algorithm = choice.algorithm;
}

void CommImpl::resetCounters() { metrics_.reset(); }

void CommImpl::startEntry(RecordedCall& c, uint64_t scheduled, uint64_t started) {
  c.entry.scheduledTick = scheduled;
  c.entry.startedTick = started;
  c.entry.endedTick = 0;
  c.entry.state = observe::OpState::kStarted;
  c.published = false;
}

void CommImpl::startRecording(std::span<const Operation> ops, uint64_t started) {
  for (size_t i = 0; i < calls_.size(); ++i)
    startEntry(calls_[i], ops[i].scheduledTick ? ops[i].scheduledTick : started, started);
  recording_ = true;
}

// Called by the engine when the call waits past its spin: from here a dump (SIGUSR1, a peer's timeout, a request)
// must find the call as started. A call that ends sooner writes its entry once, ended: one slot write instead of a
// started entry and its update, on every small call's path.
void CommImpl::publishStarted() {
  if (!recording_) return;
  for (RecordedCall& c : calls_) {
    if (c.published) continue;
    c.index = recorder_.append(c.entry);
    c.published = true;
  }
}

void CommImpl::finishEntry(RecordedCall& c, observe::OpState state, uint64_t ended) {
  if (c.published) {
    recorder_.finish(c.index, state, ended);
    return;
  }
  c.entry.state = state;
  c.entry.endedTick = ended;
  c.index = recorder_.append(c.entry);
}

bool CommImpl::finishRecording(observe::OpState state) {
  if (!recording_) return false;
  recording_ = false;
  const uint64_t ended = observe::ticks();
  for (RecordedCall& c : calls_) finishEntry(c, state, ended);
  if (state == observe::OpState::kCompleted && calls_.size() == 1) {
    const RecordedCall& only = calls_.front();
    observe::MetricsTable::addTime(only.metrics, ended - only.entry.startedTick, only.predictedNanoseconds);
  }
  return true;
}

// A blocking call: scheduled when it started.
void CommImpl::startRepeatedRecording(uint64_t started) {
  startEntry(calls_.front(), started, started);
  recording_ = true;
}

void CommImpl::finishRepeatedRecording() {
  recording_ = false;
  const uint64_t ended = observe::ticks();
  RecordedCall& c = calls_.front();
  finishEntry(c, observe::OpState::kCompleted, ended);
  observe::MetricsTable::addTime(c.metrics, ended - c.entry.startedTick, c.predictedNanoseconds);
}

void CommImpl::logCalls(std::span<const Operation> ops, double microseconds, const Status& st) const {
  for (size_t i = 0; i < ops.size(); ++i) {
    const Operation& op = ops[i];
    // A group's operations ran as one: each line gives its place in the group and the whole group's time.
    char place[64] = "";  // room for two 20-digit counts
    if (ops.size() > 1) snprintf(place, sizeof(place), " (group op %zu of %zu)", i + 1, ops.size());
    const char* algorithm = dispatcher_.algorithmOf(i, ops.size());
    CHORUS_INFO(kColl, "%s seq %llu count %zu %s %s root %d algorithm %s bytes %llu time %.2f us%s%s%s",
                algo::collName(op.type), static_cast<unsigned long long>(dispatcher_.sequence()), op.count,
                dataTypeName(op.dtype), redOpName(op.op.kind), op.root, algorithm,
                static_cast<unsigned long long>(payloadBytes(op, nranks_)), microseconds, place, st.isOk() ? "" : ": ",
                st.isOk() ? "" : st.message().c_str());
  }
}

}  // namespace chorus

#include "observe/metrics_table.hpp"

#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "algorithms/plan.hpp"
#include "observe/clock.hpp"

namespace chorus {
namespace observe {

MetricsTable::Cell* MetricsTable::cell(uint8_t collective, const char* algorithm) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (Cell& c : cells_)
    if (c.collective == collective && std::strcmp(c.algorithm, algorithm) == 0) return &c;
  Cell& c = cells_.emplace_back();
  c.collective = collective;
  c.algorithm = algorithm;
  return &c;
}

std::vector<CallMetrics> MetricsTable::read() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<CallMetrics> out;
  for (const Cell& c : cells_) {
    CallMetrics m;
    m.collective = algo::collName(static_cast<algo::CollType>(c.collective));
    m.algorithm = c.algorithm;
    m.calls = c.calls.load(std::memory_order_relaxed);
    if (m.calls == 0) continue;
    m.payloadBytes = c.payload.load(std::memory_order_relaxed);
    m.wireBytes = c.wire.load(std::memory_order_relaxed);
    m.timedCalls = c.timedCalls.load(std::memory_order_relaxed);
    m.seconds = tickNanoseconds(0, c.ticks.load(std::memory_order_relaxed)) * 1e-9;
    m.predictedSeconds = static_cast<double>(c.predictedNanoseconds.load(std::memory_order_relaxed)) * 1e-9;
    out.push_back(std::move(m));
  }
  return out;
}

void MetricsTable::totals(std::span<Totals> byCollective) const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const Cell& c : cells_) {
    if (c.collective >= byCollective.size()) continue;
    Totals& t = byCollective[c.collective];
    t.calls += c.calls.load(std::memory_order_relaxed);
    t.payload += c.payload.load(std::memory_order_relaxed);
    t.wire += c.wire.load(std::memory_order_relaxed);
  }
}

void MetricsTable::reset() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (Cell& c : cells_)
    for (auto* a : {&c.calls, &c.payload, &c.wire, &c.timedCalls, &c.ticks, &c.predictedNanoseconds})
      a->store(0, std::memory_order_relaxed);
}

}  // namespace observe

namespace {

// One Prometheus family: its HELP and TYPE lines, then a sample per cell.
template <typename Value>
void family(std::string* out, const char* name, const char* type, const char* help,
            const std::vector<CallMetrics>& metrics, const std::string& labels, Value value) {
  *out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
  for (const CallMetrics& m : metrics) {
    char sample[160];
    snprintf(sample, sizeof(sample), "%s{%s,collective=\"%s\",algorithm=\"%s\"} ", name, labels.c_str(),
             m.collective.c_str(), m.algorithm.c_str());
    *out += sample + value(m) + "\n";
  }
}

std::string integer(uint64_t v) { return std::to_string(v); }
std::string real(double v) {
  char text[32];
  snprintf(text, sizeof(text), "%.9g", v);
  return text;
}

}  // namespace

std::string formatMetrics(const std::vector<CallMetrics>& metrics, MetricsFormat format, const std::string& comm,
                          int rank) {
  std::string out;
  if (format == MetricsFormat::kJson) {
    out = "{\"comm\": \"" + comm + "\", \"rank\": " + std::to_string(rank) + ", \"metrics\": [";
    for (size_t i = 0; i < metrics.size(); ++i) {
      const CallMetrics& m = metrics[i];
      out += (i ? ", " : "") + std::string("{\"collective\": \"") + m.collective + "\", \"algorithm\": \"" +
             m.algorithm + "\", \"calls\": " + integer(m.calls) + ", \"payload_bytes\": " + integer(m.payloadBytes) +
             ", \"wire_bytes\": " + integer(m.wireBytes) + ", \"timed_calls\": " + integer(m.timedCalls) +
             ", \"seconds\": " + real(m.seconds) + ", \"predicted_seconds\": " + real(m.predictedSeconds) + "}";
    }
    return out + "]}\n";
  }
  const std::string labels = "comm=\"" + comm + "\",rank=\"" + std::to_string(rank) + "\"";
  family(&out, "chorus_calls_total", "counter", "Calls run, grouped or alone.", metrics, labels,
         [](const CallMetrics& m) { return integer(m.calls); });
  family(&out, "chorus_payload_bytes_total", "counter", "Payload bytes (nccl-tests' algorithm-bandwidth size).",
         metrics, labels, [](const CallMetrics& m) { return integer(m.payloadBytes); });
  family(&out, "chorus_wire_bytes_total", "counter", "Bytes this rank sent to other ranks.", metrics, labels,
         [](const CallMetrics& m) { return integer(m.wireBytes); });
  family(&out, "chorus_timed_calls_total", "counter", "Calls that ran alone, the ones timed.", metrics, labels,
         [](const CallMetrics& m) { return integer(m.timedCalls); });
  family(&out, "chorus_call_seconds_total", "counter", "Measured time of the timed calls.", metrics, labels,
         [](const CallMetrics& m) { return real(m.seconds); });
  family(&out, "chorus_predicted_seconds_total", "counter", "The cost model's prediction for the timed calls.", metrics,
         labels, [](const CallMetrics& m) { return real(m.predictedSeconds); });
  return out;
}

}  // namespace chorus

#include "perf/json_report.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>

#include "perf/options.hpp"

extern char** environ;

namespace chorus::perf {
namespace {

// Writes JSON with one member per line. Keeps track of commas, so callers only name what they write.
class JsonWriter {
 public:
  explicit JsonWriter(FILE* out) : out_(out) {}

  void beginObject(const char* key = nullptr) { open(key, '{'); }
  void endObject() { close('}'); }
  void beginArray(const char* key = nullptr) { open(key, '['); }
  void endArray() { close(']'); }

  void string(const char* key, const std::string& value) {
    member(key);
    quoted(value);
  }
  // nccl-tests writes booleans as the strings "true" and "false".
  void boolean(const char* key, bool value) { string(key, value ? "true" : "false"); }
  void number(const char* key, double value) {
    member(key);
    if (std::isfinite(value))
      fprintf(out_, "%.17g", value);
    else
      fputs("null", out_);
  }
  void null(const char* key) {
    member(key);
    fputs("null", out_);
  }

 private:
  void open(const char* key, char bracket) {
    member(key);
    fputc(bracket, out_);
    first_ = true;
    ++depth_;
  }
  void close(char bracket) {
    --depth_;
    if (!first_) newline();
    fputc(bracket, out_);
    first_ = false;
  }
  void member(const char* key) {
    if (depth_ > 0) {
      if (!first_) fputc(',', out_);
      newline();
    }
    first_ = false;
    if (key) {
      quoted(key);
      fputs(": ", out_);
    }
  }
  void newline() { fprintf(out_, "\n%*s", 2 * depth_, ""); }
  void quoted(const std::string& text) {
    fputc('"', out_);
    for (unsigned char ch : text) {
      if (ch == '"' || ch == '\\')
        fprintf(out_, "\\%c", ch);
      else if (ch < 0x20)
        fprintf(out_, "\\u%04x", ch);
      else
        fputc(ch, out_);
    }
    fputc('"', out_);
  }

  FILE* out_;
  int depth_ = 0;
  bool first_ = true;
};

void writeHalf(JsonWriter& json, const char* name, const char* perIterName, const ReportHalf& half, bool cpuTime) {
  json.beginObject(name);
  json.number(cpuTime ? "cpu_time" : "time", half.timeUs);
  json.number("alg_bw", half.algBw);
  json.number("bus_bw", half.busBw);
  if (half.wrong < 0)
    json.null("nwrong");
  else
    json.number("nwrong", half.wrong);
  json.endObject();
  if (!half.perIteration) return;
  const IterationStats& s = half.stats;
  json.beginObject(perIterName);
  json.number("skipped_iterations", s.skipped);
  json.number("min", s.min);
  json.number("max", s.max);
  json.number("avg", s.avg);
  json.number("p50", s.p50);
  json.number("p95", s.p95);
  json.number("p99", s.p99);
  json.number("stdev", s.stdev);
  json.number("cv", s.cv);
  json.beginArray("times_us");
  for (double t : half.timesUs) json.number(nullptr, t);
  json.endArray();
  json.endObject();
}

void writeConfig(JsonWriter& json, const Options& o, const Report& r) {
  json.beginObject("config");
  json.number("nthreads", o.nThreads);
  json.number("ngpus", o.nGpus);
  json.number("minimum_bytes", static_cast<double>(o.minBytes));
  json.number("maximum_bytes", static_cast<double>(o.maxBytes));
  if (o.stepFactor > 1)
    json.number("step_factor", static_cast<double>(o.stepFactor));
  else
    json.number("step_bytes", static_cast<double>(o.stepBytes));
  json.number("warmup_iters", o.warmupIters);
  json.number("iterations", o.iters);
  json.number("aggregated_iterations", o.aggIters);
  json.number("validation", o.check);
  json.number("graph", 0);
  json.boolean("blocking_collectives", o.blocking != 0);
  json.boolean("per_iter_timing", o.perIterTiming != 0);
  json.number("per_iter_skip", o.perIterSkip);
  json.boolean("parallel_init", false);
  json.beginArray("devices");
  for (const ReportDevice& d : r.devices) {
    json.beginObject();
    json.number("rank", d.rank);
    json.number("group", 0);
    json.number("pid", d.pid);
    json.string("hostname", d.host);
    json.number("device", -1);  // host memory: no device ordinal or PCI address
    json.string("device_hex", "host memory");
    json.string("device_info", d.info);
    json.endObject();
  }
  json.endArray();
  json.endObject();
}

void writeReport(FILE* out, const Options& o, const Report& r) {
  JsonWriter json(out);
  json.beginObject();
  json.number("version", 3);
  json.string("library", r.library);
  json.string("start_time", r.startTime);
  json.beginArray("args");
  for (const std::string& arg : o.args) json.string(nullptr, arg);
  json.endArray();
  json.beginArray("env");
  for (char** e = environ; *e; ++e) json.string(nullptr, *e);
  json.endArray();
  if (r.ncclVersion > 0)
    json.number("nccl_version", r.ncclVersion);
  else
    json.null("nccl_version");
  writeConfig(json, o, r);
  json.beginArray("results");
  for (const ReportRow& row : r.rows) {
    json.beginObject();
    json.number("size", static_cast<double>(row.bytes));
    json.number("count", static_cast<double>(row.count));
    json.string("type", row.type);
    json.string("redop", row.redop);
    json.number("root", row.root);
    writeHalf(json, "out_of_place", "out_of_place_per_iter", row.outOfPlace, o.reportCpuTime != 0);
    writeHalf(json, "in_place", "in_place_per_iter", row.inPlace, o.reportCpuTime != 0);
    json.number("actual_iterations", row.iterations);
    json.string("experiment_name", row.experiment);
    json.endObject();
  }
  json.endArray();
  json.beginObject("out_of_bounds");
  json.number("count", r.wrongCells);
  json.boolean("okay", r.wrongCells == 0);
  json.endObject();
  json.beginObject("average_bus_bandwidth");
  json.number("bandwidth", r.averageBusBw);
  json.string("okay", "unchecked");
  json.endObject();
  json.beginArray("errors");
  for (const std::string& e : r.errors) json.string(nullptr, e);
  json.endArray();
  json.string("end_time", r.endTime);
  json.endObject();
  fputc('\n', out);
}

bool exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

}  // namespace

std::string timestampNow() {
  char text[32];
  time_t now = time(nullptr);
  struct tm local;
  localtime_r(&now, &local);
  strftime(text, sizeof(text), "%Y-%m-%d %H:%M:%S", &local);
  return text;
}

std::string writeJsonReport(const std::string& path, const Options& options, const Report& report) {
  std::string name = path;
  for (int k = 0; exists(name); ++k) name = path + "." + std::to_string(k);
  FILE* out = fopen(name.c_str(), "w");
  if (!out) {
    fprintf(stderr, "-J: cannot write %s: %s\n", name.c_str(), strerror(errno));
    return "";
  }
  writeReport(out, options, report);
  const bool written = !ferror(out);
  if (fclose(out) != 0 || !written) {
    fprintf(stderr, "-J: writing %s failed: %s\n", name.c_str(), strerror(errno));
    return "";
  }
  return name;
}

}  // namespace chorus::perf

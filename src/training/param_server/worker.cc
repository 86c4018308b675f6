// A worker: computes gradients on the parameters it pulled last, then exchanges them with every server at once (a
// thread per server: pushes queued on the link to it, answers taken from the link back). A server whose exchange
// failed is dead to this worker; with replication its ranges go to their backups and the step is pushed again there.
#include <algorithm>
#include <chrono>
#include <climits>
#include <map>
#include <thread>

#include "server.hpp"

namespace chorus::training::param_server {

namespace {

using Clock = std::chrono::steady_clock;

class WorkerImpl : public Worker {
 public:
  WorkerImpl(Communicator& comm, Sequential& model, const KeyLayout& layout, const ParamServerConfig& config,
             PairLinks links)
      : comm_(comm), model_(model), layout_(layout), config_(config), links_(std::move(links)) {
    params_.resize(layout.params);
    model.initParams(params_.data(), config.seed);
    grads_.assign(layout.params, 0.0f);
    for (int r = 0; r < layout.servers; ++r) servedBy_.push_back(r);
    dead_.assign(layout.servers, false);
    pushes_.resize(layout.servers);
    answers_.resize(layout.servers);
  }

  Status forwardBackward(const Tensor& x, const std::vector<int>& labels, LossResult* result) override {
    FlatAccess access(model_, params_.data(), grads_.data());
    Tensor logits, dlogits;
    CHORUS_TRY(model_.forward(x, access, &logits));
    *result = softmaxCrossEntropy(logits, labels, &dlogits);
    return model_.backward(dlogits, access);
  }

  Status step() override {
    if (finished_) return invalidUsage("parameter server worker: step() after finish()");
    ++clock_;
    const float scale = 1.0f / static_cast<float>(layout_.workers);
    for (float& g : grads_) g *= scale;
    const Clock::time_point start = Clock::now();
    bool failedOver = false;
    std::vector<int> ranges(layout_.servers);
    for (int r = 0; r < layout_.servers; ++r) ranges[r] = r;
    std::vector<long> slowest(layout_.servers, LONG_MAX);
    while (!ranges.empty()) {
      std::vector<std::vector<int>> byServer(layout_.servers);
      for (int r : ranges) byServer[servedBy_[r]].push_back(r);
      std::vector<Status> results(layout_.servers);
      std::vector<char> linkFailed(layout_.servers, 0);
      // A thread per server but the last, whose exchange runs here (with one server: no thread at all).
      std::vector<int> busy;
      for (int s = 0; s < layout_.servers; ++s)
        if (!byServer[s].empty()) busy.push_back(s);
      auto run = [&](int s) { results[s] = exchange(s, byServer[s], &slowest[s], &linkFailed[s]); };
      std::vector<std::thread> threads;
      for (size_t i = 0; i + 1 < busy.size(); ++i) threads.emplace_back(run, busy[i]);
      if (!busy.empty()) run(busy.back());
      for (auto& t : threads) t.join();
      ranges.clear();
      for (int s = 0; s < layout_.servers; ++s) {
        if (results[s].isOk()) continue;
        if (!linkFailed[s]) return results[s];  // the server is alive and refused the push
        CHORUS_TRY(failOver(s, results[s], byServer[s], &ranges));
        failedOver = true;
      }
    }
    if (failedOver) failoverSeconds_ += std::chrono::duration<double>(Clock::now() - start).count();
    const long slowestWorker = *std::min_element(slowest.begin(), slowest.end());
    const long staleness = slowestWorker == LONG_MAX ? 0 : clock_ - slowestWorker;
    if (staleness_.size() <= static_cast<size_t>(staleness)) staleness_.resize(staleness + 1, 0);
    ++staleness_[staleness];
    std::fill(grads_.begin(), grads_.end(), 0.0f);
    return Status::ok();
  }

  Status finish() override {
    if (finished_) return Status::ok();
    finished_ = true;
    Status first;
    Message done(layout_.chunkElements);
    done.setHeader(Header{Kind::kDone});
    for (int s = 0; s < layout_.servers; ++s) {
      if (dead_[s]) continue;
      const int server = layout_.serverRank(s);
      std::vector<Request> sends;  // one for each receive the server keeps posted
      for (int i = 0; i < kPostedAhead; ++i) sends.push_back(done.sendAsync(out(s), linkRank(comm_.rank(), server)));
      Status st;
      for (Request& send : sends) {
        Status sentOne = send.wait();
        if (st.isOk()) st = sentOne;
      }
      if (first.isOk() && !st.isOk())
        first = st.withContext("parameter server worker: telling server " + std::to_string(s) + " it finished");
    }
    return first;
  }

  const std::vector<float>& params() const override { return params_; }
  WorkerStats stats() const override {
    WorkerStats s;
    s.steps = clock_;
    s.staleness = staleness_;
    s.failovers = failovers_;
    s.failoverSeconds = failoverSeconds_;
    return s;
  }
  int index() const override { return comm_.rank(); }
  int workers() const override { return layout_.workers; }

 private:
  // One step's pushes of `ranges` to server `s` and their answers, every receive posted before the first push goes.
  // A worker's pushes and the server's answers keep their order on their links, so the answers come in the order of
  // the pushes. *linkFailed: the links to the server failed (it died, or they closed), not the server's answer.
  Status exchange(int s, const std::vector<int>& ranges, long* slowest, char* linkFailed) {
    const int me = comm_.rank(), server = layout_.serverRank(s), peer = linkRank(me, server);
    std::vector<Message>& pushes = pushes_[s];
    std::vector<Message>& answers = answers_[s];
    std::vector<Header> sent;
    for (int r : ranges)
      for (int c = 0; c < layout_.chunks(r); ++c) sent.push_back({Kind::kPush, r, c, clock_, me});
    while (pushes.size() < sent.size()) pushes.emplace_back(layout_.chunkElements);
    while (answers.size() < sent.size()) answers.emplace_back(layout_.chunkElements);
    std::vector<Request> received, sends;
    for (size_t i = 0; i < sent.size(); ++i) received.push_back(answers[i].recvAsync(in(s), peer));
    for (size_t i = 0; i < sent.size(); ++i) {
      const int r = static_cast<int>(sent[i].range), c = static_cast<int>(sent[i].chunk);
      pushes[i].setHeader(sent[i]);
      std::copy_n(grads_.data() + layout_.rangeBegin(r) + layout_.chunkOffset(c), layout_.chunkSize(r, c),
                  pushes[i].payload());
      sends.push_back(pushes[i].sendAsync(out(s), peer));
    }
    Status st;
    for (size_t i = 0; i < sent.size() && st.isOk(); ++i) {
      st = received[i].wait();
      *linkFailed = !st.isOk();
      if (!st.isOk()) break;
      const Header answer = answers[i].header();
      if (answer.kind == Kind::kError) {
        st = Status(static_cast<ErrorCode>(answer.aux),
                    "parameter server rank " + std::to_string(server) + " refused this worker's push of step " +
                        std::to_string(clock_) + " (" +
                        (answer.worker >= 0 ? "worker " + std::to_string(answer.worker) + " failed"
                                            : std::string("its log names the cause")) +
                        ")");
        // The job failed: the server stops taking this worker's pushes, so what is still queued ends here.
        out(s).abort();
        in(s).abort();
      } else if (answer.kind != Kind::kParams || answer.range != sent[i].range || answer.chunk != sent[i].chunk) {
        st = internalError("parameter server rank " + std::to_string(server) + " answered out of order");
      } else {
        const int r = static_cast<int>(answer.range), c = static_cast<int>(answer.chunk);
        std::copy_n(answers[i].payload(), layout_.chunkSize(r, c),
                    params_.data() + layout_.rangeBegin(r) + layout_.chunkOffset(c));
        *slowest = std::min(*slowest, answer.aux);
      }
    }
    for (Request& r : received) (void)r.wait();
    for (Request& send : sends) {
      Status done = send.wait();
      if (st.isOk() && !done.isOk()) st = done, *linkFailed = 1;
    }
    return st;
  }

  // The links to and from server s.
  Communicator& out(int s) { return *links_.at({comm_.rank(), layout_.serverRank(s)}); }
  Communicator& in(int s) { return *links_.at({layout_.serverRank(s), comm_.rank()}); }

  // Server s failed `why`: its ranges go to their backups, or the step ends in an error naming it.
  Status failOver(int s, const Status& why, const std::vector<int>& ranges, std::vector<int>* retry) {
    dead_[s] = true;
    const std::string failed = "parameter server " + std::to_string(s) + " (rank " +
                               std::to_string(layout_.serverRank(s)) + ") failed: " + why.message();
    for (int r : ranges) {
      const std::string what = failed + "; its key range " + std::to_string(r) + " [" +
                               std::to_string(layout_.rangeBegin(r)) + ", " + std::to_string(layout_.rangeEnd(r)) + ")";
      if (!config_.replicate) return Status(why.code(), what + " has no replica (replication is off)");
      const int backup = layout_.backupOf(r);
      if (r != s || dead_[backup])
        return Status(why.code(), what + " is lost: its backup, server " + std::to_string(backup) + ", failed too");
      servedBy_[r] = backup;
      retry->push_back(r);
    }
    ++failovers_;
    return Status::ok();
  }

  Communicator& comm_;
  Sequential& model_;
  const KeyLayout layout_;
  const ParamServerConfig config_;
  PairLinks links_;
  std::vector<float> params_, grads_;
  std::vector<int> servedBy_;  // range -> the server that serves it
  std::vector<bool> dead_;
  std::vector<std::vector<Message>> pushes_, answers_;  // per server: one step's messages, kept between steps
  long clock_ = 0;
  bool finished_ = false;
  std::vector<long> staleness_;
  int failovers_ = 0;
  double failoverSeconds_ = 0;
};

}  // namespace

std::unique_ptr<Worker> makeWorker(Communicator& comm, Sequential& model, const KeyLayout& layout,
                                   const ParamServerConfig& config, PairLinks links) {
  return std::make_unique<WorkerImpl>(comm, model, layout, config, std::move(links));
}

}  // namespace chorus::training::param_server

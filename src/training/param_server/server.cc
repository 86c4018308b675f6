// A server: a thread per worker that takes the worker's pushes in order and answers each, and with replication a
// thread that applies what the previous server forwards (its replica) and, once that server died, lets the workers
// push to that replica instead.
#include "server.hpp"

#include <atomic>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

#include "../pair_links.hpp"

namespace chorus::training::param_server {

namespace {

constexpr size_t kAnswersInFlight = 4;  // per worker: enough to keep its pull link busy

class ServerImpl : public Server {
 public:
  ServerImpl(Communicator& comm, const KeyLayout& layout, const ParamServerConfig& config, ServerLinks links,
             const float* initial)
      : comm_(comm), layout_(layout), config_(config), links_(std::move(links)), index_(comm.rank() - layout.workers) {
    shards_[index_] = std::make_unique<Shard>(layout, index_, config, initial);
    if (config.replicate) {
      replicaOf_ = (index_ + layout.servers - 1) % layout.servers;
      shards_[replicaOf_] = std::make_unique<Shard>(layout, replicaOf_, config, initial);
      shards_[index_]->setForward([this](int chunk, long clock, int worker, const float* update, size_t n) {
        return forward(chunk, clock, worker, update, n);
      });
    }
  }

  Status serve() override {
    std::vector<Status> results(layout_.workers);
    std::vector<std::thread> threads;
    for (int w = 0; w < layout_.workers; ++w)
      threads.emplace_back([this, w, &results] { results[w] = serveWorker(w); });
    Status replica;
    std::thread replicaThread;
    if (config_.replicate) replicaThread = std::thread([this, &replica] { replica = keepReplica(); });
    for (auto& t : threads) t.join();
    if (config_.replicate) {
      // The backup's replica thread stops at this (a dead backup cannot take it, and needs nothing).
      const int backup = layout_.serverRank(layout_.backupOf(index_));
      (void)sendHeader(*links_.chain.at({comm_.rank(), backup}), Header{Kind::kDone}, linkRank(comm_.rank(), backup));
      replicaThread.join();
    }
    {
      std::lock_guard<std::mutex> lock(failureMutex_);
      CHORUS_TRY(failure_);
    }
    for (const Status& st : results) CHORUS_TRY(st);
    return replica;
  }

  ServerStats stats() const override {
    ServerStats s;
    for (const auto& [range, shard] : shards_) {
      (range == index_ ? s.pushesApplied : s.replicated) += shard->applied();
      s.duplicates += shard->duplicates();
    }
    s.forwarded = forwarded_;
    s.promotedRange = promoted_ ? replicaOf_ : -1;
    return s;
  }

  std::pair<size_t, size_t> range() const override { return {layout_.rangeBegin(index_), layout_.rangeEnd(index_)}; }

 private:
  // Worker w's pushes, until it is done. Its death fails every shard: the other workers learn it from their answers.
  Status serveWorker(int w) {
    const int me = comm_.rank(), peer = linkRank(me, w);
    Communicator& in = *links_.workers.at({w, me});
    Communicator& out = *links_.workers.at({me, w});
    std::vector<float> gradient(layout_.chunkElements);
    // Answers go out asynchronously, so the next push is taken in while one goes back (the link is full duplex).
    struct Answer {
      Header header;
      std::vector<float> params;
      Request sentHeader, sentParams;
    };
    std::deque<Answer> sending;
    auto reap = [&](size_t keep) {
      Status st;
      while (sending.size() > keep) {
        Status a = sending.front().sentHeader.wait(), b = sending.front().sentParams.wait();
        if (st.isOk()) st = !a.isOk() ? a : b;
        sending.pop_front();
      }
      return st;
    };
    for (;;) {
      Header h;
      Status st = recvHeader(in, &h, peer);
      if (st.isOk() && h.kind == Kind::kDone) {
        for (auto& [range, shard] : shards_) shard->workerDone(w);
        st = reap(0);
        return st.isOk() ? st : workerFailed(w, st);
      }
      const auto found = shards_.find(static_cast<int>(h.range));
      if (st.isOk() && (h.kind != Kind::kPush || found == shards_.end() || h.chunk < 0 ||
                        h.chunk >= layout_.chunks(static_cast<int>(h.range)))) {
        st = invalidUsage("worker " + std::to_string(w) + " sent a message this server cannot take (kind " +
                          std::to_string(static_cast<int64_t>(h.kind)) + ", range " + std::to_string(h.range) +
                          ", chunk " + std::to_string(h.chunk) + ")");
      }
      const int range = static_cast<int>(h.range), chunk = static_cast<int>(h.chunk);
      const size_t n = st.isOk() ? layout_.chunkSize(range, chunk) : 0;
      if (st.isOk()) st = in.recv(gradient.data(), n, DataType::kFloat32, peer);
      if (st.isOk()) st = reap(kAnswersInFlight);
      if (!st.isOk()) {
        (void)reap(0);
        return workerFailed(w, st);
      }
      if (range == replicaOf_) promoted_ = true;  // the primary died: its workers came here
      Answer& answer = sending.emplace_back();
      answer.header = Header{Kind::kParams, range, chunk, h.clock};
      answer.params.resize(n);
      const Status pushed =
          found->second->push(w, chunk, h.clock, gradient.data(), answer.params.data(), &answer.header.aux);
      if (!pushed.isOk()) {
        // The job failed (a worker died, or the step timed out): the worker learns it and ends its links with this
        // server, so this thread stops serving it.
        answer.header = Header{Kind::kError, range, chunk, h.clock, failedWorker_, static_cast<int64_t>(pushed.code())};
        answer.sentHeader = out.sendAsync(&answer.header, sizeof answer.header, DataType::kUint8, peer);
        (void)reap(0);
        return pushed;
      }
      answer.sentHeader = out.sendAsync(&answer.header, sizeof answer.header, DataType::kUint8, peer);
      answer.sentParams = out.sendAsync(answer.params.data(), n, DataType::kFloat32, peer);
    }
  }

  // Worker w's links failed: every push of the job fails from now on, naming it.
  Status workerFailed(int w, const Status& st) {
    const Status why = remoteError("parameter server rank " + std::to_string(comm_.rank()) + ": worker " +
                                   std::to_string(w) + " failed: " + st.message());
    {
      std::lock_guard<std::mutex> lock(failureMutex_);
      if (failure_.isOk()) failure_ = why, failedWorker_ = w;
    }
    for (auto& [r, shard] : shards_) shard->fail(why);
    return why;
  }

  // Chain replication, the primary's side: the update goes to the backup, which answers once it applied it.
  Status forward(int chunk, long clock, int worker, const float* update, size_t n) {
    const int me = comm_.rank(), backup = layout_.serverRank(layout_.backupOf(index_)), peer = linkRank(me, backup);
    Communicator& out = *links_.chain.at({me, backup});
    CHORUS_TRY(sendHeader(out, Header{Kind::kForward, index_, chunk, clock, worker}, peer));
    CHORUS_TRY(out.send(update, n, DataType::kFloat32, peer));
    Header ack;
    CHORUS_TRY(recvHeader(*links_.acks.at({backup, me}), &ack, peer));
    if (ack.kind != Kind::kAck) return internalError("parameter server: the backup answered a forward with no ack");
    ++forwarded_;
    return Status::ok();
  }

  // Chain replication, the backup's side. The primary's death ends it without an error: the workers push here next.
  Status keepReplica() {
    const int me = comm_.rank(), primary = layout_.serverRank(replicaOf_), peer = linkRank(me, primary);
    Communicator& in = *links_.chain.at({primary, me});
    Communicator& acks = *links_.acks.at({me, primary});
    Shard& replica = *shards_.at(replicaOf_);
    std::vector<float> update(layout_.chunkElements);
    for (;;) {
      Header h;
      if (!recvHeader(in, &h, peer).isOk()) break;
      if (h.kind == Kind::kDone) return Status::ok();
      if (h.kind != Kind::kForward || h.range != replicaOf_ || h.chunk < 0 || h.chunk >= layout_.chunks(replicaOf_))
        return internalError("parameter server: the primary of range " + std::to_string(replicaOf_) +
                             " sent a message that is not a forward");
      const int chunk = static_cast<int>(h.chunk);
      if (!in.recv(update.data(), layout_.chunkSize(replicaOf_, chunk), DataType::kFloat32, peer).isOk()) break;
      replica.applyForwarded(chunk, h.clock, static_cast<int>(h.worker), update.data());
      if (!sendHeader(acks, Header{Kind::kAck, h.range, h.chunk, h.clock}, peer).isOk()) break;
    }
    promoted_ = true;
    return Status::ok();
  }

  Communicator& comm_;
  const KeyLayout layout_;
  const ParamServerConfig config_;
  ServerLinks links_;
  const int index_;
  int replicaOf_ = -1;
  std::map<int, std::unique_ptr<Shard>> shards_;  // its own range, and the replica of the previous server's
  std::atomic<bool> promoted_{false};
  std::atomic<long> forwarded_{0};
  std::mutex failureMutex_;
  Status failure_;  // the first worker's failure: the cause the others' errors follow from
  std::atomic<int> failedWorker_{-1};
};

}  // namespace

std::unique_ptr<Server> makeServer(Communicator& comm, const KeyLayout& layout, const ParamServerConfig& config,
                                   ServerLinks links, const float* initial) {
  return std::make_unique<ServerImpl>(comm, layout, config, std::move(links), initial);
}

}  // namespace chorus::training::param_server

// A server: a thread per worker that takes the worker's pushes in order and answers each, and with replication a
// thread that applies what the previous server forwards (its replica) and, once that server died, lets the workers
// push to that replica instead.
#include "server.hpp"

#include <algorithm>
#include <atomic>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

#include "../pair_links.hpp"

namespace chorus::training::param_server {

namespace {

class ServerImpl : public Server {
 public:
  ServerImpl(Communicator& comm, const KeyLayout& layout, const ParamServerConfig& config, ServerLinks links,
             const float* initial)
      : comm_(comm), layout_(layout), config_(config), links_(std::move(links)), index_(comm.rank() - layout.workers) {
    shards_[index_] = std::make_unique<Shard>(layout, index_, config, initial);
    if (config.replicate) {
      forwarding_ = Message(layout.chunkElements);
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
      forwarding_.setHeader(Header{Kind::kDone});
      (void)forwarding_.sendAsync(*links_.chain.at({comm_.rank(), backup}), linkRank(comm_.rank(), backup)).wait();
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

 private:
  // Worker w's pushes, until it is done. Its death fails every shard: the other workers learn it from their answers.
  Status serveWorker(int w) {
    const int me = comm_.rank(), peer = linkRank(me, w);
    Communicator& in = *links_.workers.at({w, me});
    Communicator& out = *links_.workers.at({me, w});
    // Receives stay posted ahead of the worker's pushes, and answers go out while the next push comes in.
    struct Transfer {
      Message message;
      Request request;
    };
    std::deque<Transfer> incoming, answers;
    std::vector<Message> spare;  // buffers of finished transfers, reused
    auto take = [&](std::deque<Transfer>& transfers) -> Transfer& {
      Transfer& t = transfers.emplace_back();
      if (spare.empty()) {
        t.message = Message(layout_.chunkElements);
      } else {
        t.message = std::move(spare.back());
        spare.pop_back();
      }
      return t;
    };
    auto post = [&] {
      Transfer& t = take(incoming);
      t.request = t.message.recvAsync(in, peer);
    };
    auto settle = [&](std::deque<Transfer>& transfers, size_t keep) {
      Status first;
      for (; transfers.size() > keep; transfers.pop_front()) {
        Status st = transfers.front().request.wait();
        if (first.isOk()) first = st;
        spare.push_back(std::move(transfers.front().message));
      }
      return first;
    };
    // Leaving on a failure: the links with this worker end, and with them what is still posted or queued on them.
    auto leave = [&](const Status& why) {
      in.abort();
      out.abort();
      (void)settle(incoming, 0);
      (void)settle(answers, 0);
      return why;
    };
    for (int i = 0; i < kPostedAhead; ++i) post();
    for (;;) {
      Status st = incoming.front().request.wait();
      const Message& push = incoming.front().message;
      const Header h = push.header();
      if (st.isOk() && h.kind == Kind::kDone) {
        st = settle(incoming, 0);  // the worker sent one kDone for each posted receive
        if (st.isOk()) st = settle(answers, 0);
        for (auto& [range, shard] : shards_) shard->workerDone(w);
        return st.isOk() ? st : leave(workerFailed(w, st));
      }
      const auto found = shards_.find(static_cast<int>(h.range));
      if (st.isOk() && (h.kind != Kind::kPush || found == shards_.end() || h.chunk < 0 ||
                        h.chunk >= layout_.chunks(static_cast<int>(h.range)))) {
        st = invalidUsage("worker " + std::to_string(w) + " sent a message this server cannot take (kind " +
                          std::to_string(static_cast<int64_t>(h.kind)) + ", range " + std::to_string(h.range) +
                          ", chunk " + std::to_string(h.chunk) + ")");
      }
      if (st.isOk()) st = settle(answers, kPostedAhead);
      if (!st.isOk()) return leave(workerFailed(w, st));
      const int range = static_cast<int>(h.range), chunk = static_cast<int>(h.chunk);
      if (range == replicaOf_) promoted_ = true;  // the primary died: its workers came here
      Transfer& answer = take(answers);
      Header reply{Kind::kParams, range, chunk, h.clock};
      const Status pushed =
          found->second->push(w, chunk, h.clock, push.payload(), answer.message.payload(), &reply.aux);
      if (!pushed.isOk()) {
        // The job failed (a worker died, or the step timed out): the worker learns it from this answer.
        reply = Header{Kind::kError, range, chunk, h.clock, failedWorker_, static_cast<int64_t>(pushed.code())};
      }
      answer.message.setHeader(reply);
      answer.request = answer.message.sendAsync(out, peer);
      if (!pushed.isOk()) {
        (void)answer.request.wait();
        return leave(pushed);
      }
      spare.push_back(std::move(incoming.front().message));
      incoming.pop_front();
      post();
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
    forwarding_.setHeader(Header{Kind::kForward, index_, chunk, clock, worker});
    std::copy_n(update, n, forwarding_.payload());
    CHORUS_TRY(forwarding_.sendAsync(*links_.chain.at({me, backup}), peer).wait());
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
    Message forward(layout_.chunkElements);
    for (;;) {
      if (!forward.recvAsync(in, peer).wait().isOk()) break;
      const Header h = forward.header();
      if (h.kind == Kind::kDone) return Status::ok();
      if (h.kind != Kind::kForward || h.range != replicaOf_ || h.chunk < 0 || h.chunk >= layout_.chunks(replicaOf_))
        return internalError("parameter server: the primary of range " + std::to_string(replicaOf_) +
                             " sent a message that is not a forward");
      replica.applyForwarded(static_cast<int>(h.chunk), h.clock, static_cast<int>(h.worker), forward.payload());
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
  Message forwarding_;  // the primary's forward to its backup (sent under its shard's lock, one at a time)
};

}  // namespace

std::unique_ptr<Server> makeServer(Communicator& comm, const KeyLayout& layout, const ParamServerConfig& config,
                                   ServerLinks links, const float* initial) {
  return std::make_unique<ServerImpl>(comm, layout, config, std::move(links), initial);
}

}  // namespace chorus::training::param_server

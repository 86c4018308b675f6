#include "comm/group.hpp"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <span>
#include <thread>

#include "chorus/communicator.hpp"
#include "comm/async_worker.hpp"
#include "core/log.hpp"
#include "gpu/peer_group.hpp"
#include "gpu/stream_calls.hpp"

namespace chorus {
namespace {

struct GroupState {
  std::vector<std::function<Status()>> inits;
  std::vector<std::pair<std::shared_ptr<CommImpl>, Operation>> ops;  // shared: an abort may drop the comm meanwhile
};

thread_local GroupState tGroup;
// Apart from tGroup so that the check on every call needs no constructor guard.
thread_local int tGroupDepth = 0;

// Inits are collective: ranks created from one thread must run them concurrently.
Status runInits(std::vector<std::function<Status()>>& inits) {
  if (inits.size() == 1) return inits[0]();
  std::vector<Status> results(inits.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < inits.size(); ++i) threads.emplace_back([&, i] { results[i] = inits[i](); });
  for (auto& t : threads) t.join();
  for (auto& st : results)
    if (!st.isOk()) return st;
  return Status::ok();
}

// A communicator's operations of one group, in call order.
using CommOps = std::pair<CommImpl*, std::vector<Operation>>;

// Reused by each thread's groups, so that a group repeated in a loop allocates nothing here: its operations by
// communicator (in the order the communicators first appear; a group names few) and the lists made from them.
struct GroupScratch {
  std::vector<CommOps> byComm;  // the first entries are the running group's, the rest empty
  std::vector<CommImpl*> lockOrder;
  std::vector<std::unique_lock<std::mutex>> locks;
  std::vector<engine::Execution*> executions;
};
thread_local GroupScratch tScratch;

// The device path's first call on each communicator sets it up collectively: communicators driven by this one thread
// set up concurrently, as their inits do.
Status preparePeerMemory(std::span<const CommOps> calls) {
  std::vector<std::function<Status()>> setUps;
  for (const CommOps& call : calls) {
    CommImpl* c = call.first;
    const std::vector<Operation>& ops = call.second;
    if (c->peerMemory() || ops.empty() || !ops.front().onDevice) continue;
    setUps.push_back([c, &ops] {
      bool usable = false;
      return gpu::preparePeerMemory(*c, ops, &usable);
    });
  }
  return setUps.size() > 1 ? runInits(setUps) : Status::ok();
}

// A communicator's operations of a group on device buffers go to their streams together, as one call; the
// communicators' calls are enqueued together too (gpu::enqueueOnStreams interleaves them). The communicators whose
// operations are on host memory stay at the front of `calls`, in order; *onHost tells how many.
Status enqueueDeviceOperations(std::span<CommOps> calls, size_t* onHost) {
  *onHost = 0;
  const bool anyDevice = std::any_of(calls.begin(), calls.end(), [](const CommOps& c) {
    return std::any_of(c.second.begin(), c.second.end(), [](const Operation& op) { return op.onDevice; });
  });
  if (!anyDevice) {
    *onHost = calls.size();
    return Status::ok();
  }
  CHORUS_TRY(preparePeerMemory(calls));
  std::vector<std::pair<gpu::HostComm*, std::vector<Operation>>> onDevice;
  for (CommOps& call : calls) {
    const std::vector<Operation>& ops = call.second;
    const size_t device = std::count_if(ops.begin(), ops.end(), [](const Operation& op) { return op.onDevice; });
    if (device == 0) {
      std::swap(calls[(*onHost)++], call);
    } else if (device < ops.size()) {
      return invalidArgument("a group's calls on one communicator mix host and device buffers (rank " +
                             std::to_string(call.first->rank()) + "); they must all be one or the other");
    } else {
      onDevice.emplace_back(call.first, std::move(call.second));
    }
  }
  if (!onDevice.empty()) CHORUS_TRY(gpu::enqueueOnStreams(onDevice));
  return Status::ok();
}

Status runOperations(std::vector<std::pair<std::shared_ptr<CommImpl>, Operation>>& queued) {
  // One execution per communicator, holding its operations in call order.
  GroupScratch& scratch = tScratch;
  size_t comms = 0;
  for (auto& [comm, op] : queued) {
    size_t i = 0;
    while (i < comms && scratch.byComm[i].first != comm.get()) ++i;
    if (i == comms) {
      if (comms == scratch.byComm.size()) scratch.byComm.emplace_back();
      scratch.byComm[comms++].first = comm.get();
    }
    scratch.byComm[i].second.push_back(std::move(op));
  }
  // The lists keep their capacity for the next group.
  struct Emptied {
    std::span<CommOps> calls;
    ~Emptied() {
      for (CommOps& c : calls) c.second.clear();
    }
  } emptied{std::span<CommOps>(scratch.byComm.data(), comms)};
  CHORUS_TRY(enqueueDeviceOperations(emptied.calls, &comms));
  if (comms == 0) return Status::ok();
  const std::span<CommOps> calls(scratch.byComm.data(), comms);
  for (const CommOps& c : calls) c.first->waitForAsyncWork();
  // Lock in address order so two threads grouping overlapping communicators cannot deadlock.
  scratch.lockOrder.clear();
  for (const CommOps& c : calls) scratch.lockOrder.push_back(c.first);
  std::sort(scratch.lockOrder.begin(), scratch.lockOrder.end());
  scratch.locks.clear();
  for (CommImpl* c : scratch.lockOrder) scratch.locks.emplace_back(c->executionMutex());
  struct Unlocked {
    std::vector<std::unique_lock<std::mutex>>& locks;
    ~Unlocked() { locks.clear(); }
  } unlocked{scratch.locks};

  scratch.executions.assign(calls.size(), nullptr);
  for (size_t i = 0; i < calls.size(); ++i)
    CHORUS_TRY(calls[i].first->prepare(calls[i].second, &scratch.executions[i]));
  log::RankScope scope(calls.size() == 1 ? calls[0].first->rank() : -1);
  const bool logged = log::enabled(log::Level::kInfo, log::kColl);
  const auto start = logged ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
  Status st = engine::run(scratch.executions);
  if (st.isOk())
    for (const CommOps& c : calls) c.first->complete(c.second);
  if (logged) {
    const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    for (const CommOps& c : calls) {
      log::RankScope rank(c.first->rank());
      c.first->logCalls(c.second, us, st);
    }
  }
  if (!st.isOk()) {
    Status first = st;
    for (size_t i = 0; i < calls.size(); ++i) {
      Status told = calls[i].first->failCall(st);
      if (i == 0) first = told;
    }
    return first;
  }
  return st;
}

}  // namespace

namespace group {
bool active() { return tGroupDepth > 0; }
void deferInit(std::function<Status()> init) { tGroup.inits.push_back(std::move(init)); }
void deferOperation(CommImpl* comm, Operation op) { tGroup.ops.emplace_back(comm->shared_from_this(), std::move(op)); }
}  // namespace group

Status groupStart() {
  ++tGroupDepth;
  return Status::ok();
}

Status groupEnd() {
  if (tGroupDepth == 0) return invalidUsage("groupEnd without a matching groupStart");
  if (--tGroupDepth > 0) return Status::ok();
  auto inits = std::move(tGroup.inits);
  tGroup.inits.clear();
  std::vector<std::pair<std::shared_ptr<CommImpl>, Operation>> ops;
  ops.swap(tGroup.ops);
  if (!inits.empty()) CHORUS_TRY(runInits(inits));
  Status st = ops.empty() ? Status::ok() : runOperations(ops);
  ops.clear();
  if (tGroup.ops.empty()) tGroup.ops.swap(ops);  // its capacity serves the next group
  return st;
}

Request groupEndAsync() {
  if (tGroupDepth != 1) {
    if (tGroupDepth > 1) --tGroupDepth;  // as groupEnd, the nesting level still ends
    return finishedRequest(invalidUsage(tGroupDepth == 0 ? "groupEndAsync without a matching groupStart"
                                                         : "groupEndAsync inside a nested group"));
  }
  tGroupDepth = 0;
  auto inits = std::move(tGroup.inits);
  auto queued = std::move(tGroup.ops);
  tGroup.inits.clear();
  tGroup.ops.clear();
  if (queued.empty() && inits.empty()) return finishedRequest(Status::ok());
  const bool oneComm =
      std::all_of(queued.begin(), queued.end(), [&](const auto& q) { return q.first == queued[0].first; });
  if (!inits.empty() || !oneComm) {
    return finishedRequest(invalidUsage("groupEndAsync: the group must hold operations of one communicator only"));
  }
  std::shared_ptr<CommImpl> comm = queued[0].first;
  std::vector<Operation> ops;
  for (auto& q : queued) ops.push_back(std::move(q.second));
  if (std::any_of(ops.begin(), ops.end(), [](const Operation& op) { return op.onDevice; })) {
    // Device buffers are complete once enqueued on their streams, as with groupEnd.
    CommOps call{comm.get(), std::move(ops)};
    size_t onHost = 0;
    return finishedRequest(enqueueDeviceOperations(std::span<CommOps>(&call, 1), &onHost));
  }
  return comm->submit(std::move(ops));
}

}  // namespace chorus

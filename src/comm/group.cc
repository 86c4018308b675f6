#include "comm/group.hpp"

#include <algorithm>
#include <chrono>
#include <map>
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

// The device path's first call on each communicator sets it up collectively: communicators driven by this one thread
// set up concurrently, as their inits do.
Status preparePeerMemory(const std::vector<CommImpl*>& comms, std::map<CommImpl*, std::vector<Operation>>& byComm) {
  std::vector<std::function<Status()>> setUps;
  for (CommImpl* c : comms) {
    const std::vector<Operation>& ops = byComm[c];
    if (c->peerMemory() || ops.empty() || !ops.front().onDevice) continue;
    setUps.push_back([c, &ops] {
      bool usable = false;
      return gpu::preparePeerMemory(*c, ops, &usable);
    });
  }
  return setUps.size() > 1 ? runInits(setUps) : Status::ok();
}

// A communicator's operations of a group on device buffers go to their streams together, as one call; the
// communicators' calls are enqueued together too (gpu::enqueueOnStreams interleaves them).
Status enqueueDeviceOperations(std::vector<CommImpl*>& comms, std::map<CommImpl*, std::vector<Operation>>& byComm) {
  CHORUS_TRY(preparePeerMemory(comms, byComm));
  std::vector<CommImpl*> onHost;
  std::vector<std::pair<CommImpl*, std::vector<Operation>>> onDevice;
  for (CommImpl* c : comms) {
    const std::vector<Operation>& ops = byComm[c];
    const size_t device = std::count_if(ops.begin(), ops.end(), [](const Operation& op) { return op.onDevice; });
    if (device == 0) {
      onHost.push_back(c);
    } else if (device < ops.size()) {
      return invalidArgument("a group's calls on one communicator mix host and device buffers (rank " +
                             std::to_string(c->rank()) + "); they must all be one or the other");
    } else {
      onDevice.emplace_back(c, ops);
    }
  }
  if (!onDevice.empty()) CHORUS_TRY(gpu::enqueueOnStreams(onDevice));
  comms = std::move(onHost);
  return Status::ok();
}

Status runOperations(std::vector<std::pair<std::shared_ptr<CommImpl>, Operation>>& queued) {
  // One execution per communicator, holding its operations in call order.
  std::vector<CommImpl*> comms;
  std::map<CommImpl*, std::vector<Operation>> byComm;
  for (auto& [comm, op] : queued) {
    if (!byComm.count(comm.get())) comms.push_back(comm.get());
    byComm[comm.get()].push_back(std::move(op));
  }
  CHORUS_TRY(enqueueDeviceOperations(comms, byComm));
  if (comms.empty()) return Status::ok();
  for (CommImpl* c : comms) c->waitForAsyncWork();
  // Lock in address order so two threads grouping overlapping communicators cannot deadlock.
  std::vector<CommImpl*> lockOrder = comms;
  std::sort(lockOrder.begin(), lockOrder.end());
  std::vector<std::unique_lock<std::mutex>> locks;
  for (CommImpl* c : lockOrder) locks.emplace_back(c->executionMutex());

  std::vector<engine::Execution*> executions(comms.size());
  for (size_t i = 0; i < comms.size(); ++i) CHORUS_TRY(comms[i]->prepare(byComm[comms[i]], &executions[i]));
  log::RankScope scope(comms.size() == 1 ? comms[0]->rank() : -1);
  const bool logged = log::enabled(log::Level::kInfo, log::kColl);
  const auto start = logged ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
  Status st = engine::run(executions);
  if (st.isOk())
    for (size_t i = 0; i < comms.size(); ++i) comms[i]->complete(byComm[comms[i]]);
  if (logged) {
    const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    for (CommImpl* c : comms) {
      log::RankScope rank(c->rank());
      c->logCalls(byComm[c], us, st);
    }
  }
  if (!st.isOk()) {
    Status first = st;
    for (size_t i = 0; i < comms.size(); ++i) {
      Status told = comms[i]->failCall(st);
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
  auto ops = std::move(tGroup.ops);
  tGroup.inits.clear();
  tGroup.ops.clear();
  if (!inits.empty()) CHORUS_TRY(runInits(inits));
  if (!ops.empty()) CHORUS_TRY(runOperations(ops));
  return Status::ok();
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
    std::vector<CommImpl*> comms{comm.get()};
    std::map<CommImpl*, std::vector<Operation>> byComm{{comm.get(), std::move(ops)}};
    return finishedRequest(enqueueDeviceOperations(comms, byComm));
  }
  return comm->submit(std::move(ops));
}

}  // namespace chorus

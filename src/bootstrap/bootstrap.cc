#include "bootstrap/bootstrap.hpp"

#include <map>
#include <mutex>

#include "bootstrap/id_layout.hpp"
#include "bootstrap/user_store.hpp"
#include "core/log.hpp"

namespace chorus::bootstrap {
namespace {

// The n-th communicator a rank builds from the same id (or store prefix) gets the n-th key space, so ids can be
// reused (the fixed-address ids of CHORUS_COMM_ID are always the same). Every rank creates them in the same order.
int nextGeneration(const std::string& name, int rank) {
  static std::mutex mutex;
  static std::map<std::pair<std::string, int>, int> generations;
  std::lock_guard<std::mutex> lock(mutex);
  return generations[{name, rank}]++;
}

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace

Status Bootstrap::join(const UniqueId& id, int nranks, int rank, std::unique_ptr<Bootstrap>* out) {
  IdLayout l = decodeId(id);
  if (l.magic != kIdMagic) return invalidArgument("the UniqueId was not made by chorus (bad magic)");
  net::Endpoint root{l.rootIp, l.rootPort};
  if (l.rootByRank0 && rank == 0) {
    net::Endpoint bound;
    Status st = startStoreServer(l.rootIp, l.rootPort, l.secret, &bound);
    if (!st.isOk()) return st.withContext("rank 0 could not start the rendezvous root at " + root.toString());
  }
  auto b = std::unique_ptr<Bootstrap>(new Bootstrap());
  std::unique_ptr<StoreClient> client;
  CHORUS_TRY(StoreClient::connect(root, l.secret, Deadline::fromSettings(), &client));
  b->store_ = std::move(client);
  b->namespace_ = std::to_string(l.secret) + "/" +
                  std::to_string(nextGeneration(std::string(id.bytes.data(), id.bytes.size()), rank));
  b->rank_ = rank;
  b->nranks_ = nranks;
  *out = std::move(b);
  return Status::ok();
}

Status Bootstrap::join(std::shared_ptr<Store> store, const std::string& prefix, int nranks, int rank,
                       std::unique_ptr<Bootstrap>* out) {
  auto b = std::unique_ptr<Bootstrap>(new Bootstrap());
  b->store_ = std::make_shared<UserStore>(std::move(store));
  // The prefix keeps communicators of one store apart; the generation, communicators made again under one prefix.
  b->namespace_ = "chorus/" + prefix + "/" + std::to_string(nextGeneration("store:" + prefix, rank));
  b->rank_ = rank;
  b->nranks_ = nranks;
  *out = std::move(b);
  return Status::ok();
}

std::unique_ptr<Bootstrap> Bootstrap::child(const std::string& name, int nranks, int rank) const {
  auto b = std::unique_ptr<Bootstrap>(new Bootstrap());
  b->store_ = store_;
  b->namespace_ = namespace_ + "/" + name;
  b->rank_ = rank;
  b->nranks_ = nranks;
  return b;
}

Status Bootstrap::set(const std::string& tag, const std::string& value) { return store_->set(key(tag), value); }

Status Bootstrap::get(const std::string& tag, std::string* value) {
  return store_->get(key(tag), value, Deadline::fromSettings());
}

Status Bootstrap::add(const std::string& tag, int64_t delta, int64_t* result) {
  return store_->add(key(tag), delta, result);
}

Status Bootstrap::setIfAbsent(const std::string& tag, const std::string& value, std::string* stored) {
  return store_->setIfAbsent(key(tag), value, stored);
}

Status Bootstrap::allGather(const std::string& tag, const std::string& mine, std::vector<std::string>* all) {
  CHORUS_TRY(set(tag + "/" + std::to_string(rank_), mine));
  all->assign(nranks_, {});
  for (int r = 0; r < nranks_; ++r) {
    Status st = get(tag + "/" + std::to_string(r), &(*all)[r]);
    // Another rank's failed setup names its own cause; only a wait that ran out says whom it waited for.
    if (!st.isOk() && st.code() != ErrorCode::kTimeout) return st;
    if (!st.isOk()) return st.withContext("waiting for rank " + std::to_string(r) + " to join '" + tag + "'");
  }
  return Status::ok();
}

Status Bootstrap::barrier(const std::string& tag) {
  int64_t arrived = 0;
  CHORUS_TRY(store_->add(key(tag + "/count"), 1, &arrived));
  if (arrived == nranks_) CHORUS_TRY(set(tag + "/done", "1"));
  std::string ignored;
  Status st = get(tag + "/done", &ignored);
  return st.isOk() || st.code() != ErrorCode::kTimeout
             ? st
             : st.withContext("barrier '" + tag + "' (not every rank arrived)");
}

Status Bootstrap::beginSetup() { return store_->join(namespace_, rank_, nranks_); }

Status Bootstrap::finishSetup() { return store_->ready(namespace_); }

void Bootstrap::failSetup(const std::string& why) {
  std::string first;
  reportFailure("rank " + std::to_string(rank_) + " failed its init: " + why, &first);
}

void Bootstrap::reportFailure(const std::string& why, std::string* first) {
  // A store that is gone (its rank failed too) knows no cause: this rank's own view of the failure stands.
  std::string cause;
  *first = store_->fail(namespace_, why, &cause).isOk() ? cause : "";
}

Status Bootstrap::setupStatus() {
  int64_t ignored = 0;
  return store_->add(key("alive"), 0, &ignored);
}

std::unique_ptr<Bootstrap> Bootstrap::successor(const std::string& name, int nranks, int rank) const {
  auto b = child(name, nranks, rank);
  b->namespace_ = namespace_ + "+" + name;
  return b;
}

uint64_t Bootstrap::commHash() const { return fnv1a(namespace_); }

}  // namespace chorus::bootstrap

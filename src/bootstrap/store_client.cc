#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include "bootstrap/store.hpp"

namespace chorus::bootstrap {

StoreClient::~StoreClient() { net::closeFd(fd_); }

Status StoreClient::connect(const net::Endpoint& server, uint64_t secret, const Deadline& deadline,
                            std::unique_ptr<StoreClient>* out) {
  auto client = std::unique_ptr<StoreClient>(new StoreClient());
  client->server_ = server;
  Status st = net::connectTo(server, deadline, &client->fd_);
  if (!st.isOk()) return st.withContext("bootstrap root " + server.toString());
  wire::Hello hello{wire::kHelloMagic, secret};
  CHORUS_TRY(net::sendAll(client->fd_, &hello, sizeof(hello), deadline));
  *out = std::move(client);
  return Status::ok();
}

Status StoreClient::request(uint32_t op, const std::string& key, const std::string& value, std::string* reply,
                            const Deadline& deadline, bool* answered) {
  // try_lock in a loop rather than a timed mutex: ThreadSanitizer does not see pthread_mutex_clocklock.
  std::unique_lock<std::mutex> lock(mutex_, std::defer_lock);
  while (!lock.try_lock()) {
    if (deadline.expired())
      return timeoutError("bootstrap root " + server_.toString() + " (key '" + key + "'): busy with another request");
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (fd_ < 0) return remoteError("bootstrap root " + server_.toString() + " is not connected");
  const uint64_t sequence = ++sequence_;
  wire::RequestHeader h{op, static_cast<uint32_t>(key.size()), value.size(), sequence};
  std::string msg(reinterpret_cast<const char*>(&h), sizeof(h));
  msg += key;
  msg += value;
  Status st = net::sendAll(fd_, msg.data(), msg.size(), deadline);
  // Replies to requests that gave up waiting earlier may come first: skipped by their sequence numbers.
  wire::ReplyHeader r{};
  while (st.isOk()) {
    pollfd readable{fd_, POLLIN, 0};
    int ready = 0;
    do {
      ready = poll(&readable, 1, deadline.remainingMs());
    } while ((ready == 0 || (ready < 0 && errno == EINTR)) && !deadline.expired());
    if (readable.revents == 0) {
      // Nothing of the reply has arrived: the stream stays in step, and the reply is skipped when it comes.
      return timeoutError("bootstrap root " + server_.toString() + " (key '" + key + "'): no reply before the " +
                          (deadline.cancelled() ? "cancellation" : "timeout"));
    }
    // A reply that started arriving is read whole (it follows its first bytes closely), under CHORUS_TIMEOUT up to
    // 10 s: not the caller's wait, which may be a slice of milliseconds (agreement's polls) or cancelled by now.
    const Deadline rest = Deadline::uncancellableAfter(std::min(10.0, timeoutOr(0)));
    st = net::recvAll(fd_, &r, sizeof(r), rest);
    if (st.isOk() && r.valueBytes > wire::kMaxValue) st = remoteError("malformed reply");
    if (st.isOk()) {
      reply->resize(r.valueBytes);
      st = net::recvAll(fd_, reply->data(), reply->size(), rest);
    }
    if (st.isOk() && r.sequence == sequence) break;
    if (st.isOk() && r.sequence > sequence) st = remoteError("reply to a request not sent yet");
  }
  if (!st.isOk()) {
    // The stream position is unknown after a failure: this client is unusable from now on.
    net::closeFd(fd_);
    return st.withContext("bootstrap root " + server_.toString() + " (key '" + key + "')");
  }
  if (answered) *answered = true;
  if (r.status != wire::kOk) return remoteError(*reply);
  return Status::ok();
}

Status StoreClient::set(const std::string& key, const std::string& value) {
  std::string ignored;
  return request(wire::kSet, key, value, &ignored, Deadline::fromSettings());
}

Status StoreClient::get(const std::string& key, std::string* value, const Deadline& deadline) {
  return request(wire::kGet, key, "", value, deadline);
}

Status StoreClient::add(const std::string& key, int64_t delta, int64_t* result) {
  std::string reply;
  CHORUS_TRY(request(wire::kAdd, key, std::string(reinterpret_cast<const char*>(&delta), sizeof(delta)), &reply,
                     Deadline::fromSettings()));
  if (reply.size() != sizeof(*result)) return internalError("store add: bad reply size");
  memcpy(result, reply.data(), sizeof(*result));
  return Status::ok();
}

Status StoreClient::setIfAbsent(const std::string& key, const std::string& value, std::string* stored) {
  return request(wire::kSetIfAbsent, key, value, stored, Deadline::fromSettings());
}

Status StoreClient::join(const std::string& space, int rank, int nranks) {
  std::string ignored;
  return request(wire::kJoin, space, std::to_string(rank) + " " + std::to_string(nranks), &ignored,
                 Deadline::fromSettings());
}

Status StoreClient::ready(const std::string& space) {
  std::string ignored;
  return request(wire::kReady, space, "", &ignored, Deadline::fromSettings());
}

Status StoreClient::fail(const std::string& space, const std::string& why, std::string* firstCause) {
  std::string reply;
  bool answered = false;
  // Said on the way out of a failed init: a root that is gone too must not hold it for long.
  Status st =
      request(wire::kFail, space, why, &reply, Deadline::after(std::min(1.0, TimeoutScope::seconds())), &answered);
  if (!answered) return st;
  *firstCause = st.isOk() ? why : reply;  // a failed namespace is answered with its first cause
  return Status::ok();
}

}  // namespace chorus::bootstrap

// The rendezvous store: a key/value server run by one process (the one that created the UniqueId), and the client
// each rank keeps. Ranks exchange their addresses through it; get() waits until the key is set.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "bootstrap/socket.hpp"
#include "chorus/status.hpp"

namespace chorus::bootstrap {

/// Starts a store server listening on `ip`:`port` (0 = any port) in a background thread of this process. It ends
/// when the last rank that used it has disconnected and every communicator's ranks have arrived (or CHORUS_TIMEOUT
/// after the last one left). Clients must present `secret`. A fixed endpoint this process
/// already serves is not started twice.
Status startStoreServer(uint32_t ip, uint16_t port, uint64_t secret, net::Endpoint* bound);

/// What the bootstrap asks of a rendezvous store: chorus's own server (StoreClient) or a framework's store
/// (UserStore, bootstrap/user_store.hpp).
class KeyValueStore {
 public:
  virtual ~KeyValueStore() = default;
  virtual Status set(const std::string& key, const std::string& value) = 0;
  /// Waits until `key` is set, then returns its value.
  virtual Status get(const std::string& key, std::string* value, const Deadline& deadline) = 0;
  /// Adds `delta` to the integer at `key` (0 when absent) and returns the new value.
  virtual Status add(const std::string& key, int64_t delta, int64_t* result) = 0;
  /// Sets `key` to `value` unless it is set already; *stored is what it holds afterwards (the first writer's).
  /// kInvalidUsage: the store cannot (a framework's store without it, chorus::Store::setIfAbsent).
  virtual Status setIfAbsent(const std::string& key, const std::string& value, std::string* stored) = 0;

  /// Setup of the communicator whose keys live under `space`: this client's `rank` (of `nranks`) starts it, finishes
  /// it, or fails it with `why`. Once some rank failed `space`, requests on keys under it fail with the first cause
  /// (chorus's server also fails them when a rank between join and ready loses its connection). join and ready
  /// return that cause when `space` already failed; fail sets *firstCause to it (`why` when this is the first) and
  /// returns an error only when the store could not be told (it is gone: its error is no cause of the failure).
  virtual Status join(const std::string& space, int rank, int nranks) = 0;
  virtual Status ready(const std::string& space) = 0;
  virtual Status fail(const std::string& space, const std::string& why, std::string* firstCause) = 0;
};

/// A connection to chorus's own store server.
class StoreClient : public KeyValueStore {
 public:
  ~StoreClient() override;
  static Status connect(const net::Endpoint& server, uint64_t secret, const Deadline& deadline,
                        std::unique_ptr<StoreClient>* out);

  Status set(const std::string& key, const std::string& value) override;
  Status get(const std::string& key, std::string* value, const Deadline& deadline) override;
  Status add(const std::string& key, int64_t delta, int64_t* result) override;
  Status setIfAbsent(const std::string& key, const std::string& value, std::string* stored) override;
  Status join(const std::string& space, int rank, int nranks) override;
  Status ready(const std::string& space) override;
  Status fail(const std::string& space, const std::string& why, std::string* firstCause) override;

 private:
  /// *answered (where given) tells whether the server replied, with success or with a refusal.
  Status request(uint32_t op, const std::string& key, const std::string& value, std::string* reply,
                 const Deadline& deadline, bool* answered = nullptr);
  int fd_ = -1;
  uint64_t sequence_ = 0;  // of the last request sent
  net::Endpoint server_;
  std::mutex mutex_;  // one request at a time; a caller waits for it no longer than its own deadline
};

/// Wire format shared by client and server.
namespace wire {
inline constexpr uint64_t kHelloMagic = 0x63686f7275735354ull;  // "chorusST"
inline constexpr uint32_t kSet = 1, kGet = 2, kAdd = 3, kJoin = 4, kFail = 5, kReady = 6, kSetIfAbsent = 7;
inline constexpr uint32_t kLastOp = kSetIfAbsent;
inline constexpr uint32_t kOk = 0, kFailed = 1;  // a failed reply's value is the cause
inline constexpr uint32_t kMaxKey = 4096;
inline constexpr uint64_t kMaxValue = 64ull << 20;
struct Hello {
  uint64_t magic;
  uint64_t secret;
};
struct RequestHeader {
  uint32_t op;
  uint32_t keyBytes;
  uint64_t valueBytes;
  uint64_t sequence;  // echoed in the reply: a client that gave up waiting for one reply skips it later
};
struct ReplyHeader {
  uint32_t status;
  uint32_t reserved;
  uint64_t valueBytes;
  uint64_t sequence;
};
}  // namespace wire

}  // namespace chorus::bootstrap

#include "bootstrap/tls.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <sstream>
#include <string>
#include <unordered_map>

#include "bootstrap/settings.hpp"
#include "core/log.hpp"

#ifdef CHORUS_HAVE_OPENSSL
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/kdf.h>
#include <openssl/ssl.h>
#endif

namespace chorus::net::tls {
namespace {

std::string peerOf(int fd) {
  sockaddr_in a{};
  socklen_t len = sizeof(a);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0 || a.sin_family != AF_INET) return "a peer";
  char ip[INET_ADDRSTRLEN] = "?";
  inet_ntop(AF_INET, &a.sin_addr, ip, sizeof(ip));
  return std::string(ip) + ":" + std::to_string(ntohs(a.sin_port));
}

// The key in force. `chosen` once setKey was called: from then on the API decides, not CHORUS_TLS_PSK_FILE.
struct Key {
  std::mutex mutex;
  bool chosen = false;
  bool fileRead = false;
  std::string secret;  // empty: plaintext
  Status problem;      // a key file that could not serve
  std::atomic<bool> on{false};
  // Set once the answer of enabled() is known (the file read, or setKey called): from then on it reads `on` alone,
  // without the mutex, which every connection of a plaintext process would otherwise take.
  std::atomic<bool> settled{false};
};
Key& key() {
  static Key* k = new Key;  // never destroyed: sockets may close during static destruction
  return *k;
}

Status checkLength(size_t bytes, const std::string& what) {
  if (bytes >= kMinKeyBytes) return Status::ok();
  return invalidArgument(what + " holds " + std::to_string(bytes) + " bytes; a TLS key needs at least " +
                         std::to_string(kMinKeyBytes));
}

// Reads CHORUS_TLS_PSK_FILE once, unless setKey decided first. Called with the key's mutex held.
void readKeyFile(Key& k) {
  if (k.chosen || k.fileRead) return;
  k.fileRead = true;
  struct Settle {
    Key& k;
    ~Settle() { k.settled.store(true, std::memory_order_release); }
  } settle{k};
  const std::string path = settings()[bootstrap::kTlsPskFile];
  if (path.empty()) return;
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  if (in) text << in.rdbuf();
  std::string secret = text.str();
  while (!secret.empty() && (secret.back() == '\n' || secret.back() == '\r')) secret.pop_back();
  k.on = true;  // a key was asked for: its problems fail connections rather than leave them in plaintext
  if (!in) {
    k.problem = invalidArgument("CHORUS_TLS_PSK_FILE=" + path + " cannot be read");
  } else if (Status st = checkLength(secret.size(), "CHORUS_TLS_PSK_FILE=" + path); !st.isOk()) {
    k.problem = st;
  } else if (!built()) {
    k.problem = invalidUsage("CHORUS_TLS_PSK_FILE is set, but this chorus was built without OpenSSL 3 (libssl-dev)");
  } else {
    k.secret = std::move(secret);
  }
}

}  // namespace

bool enabled() {
  Key& k = key();
  if (k.settled.load(std::memory_order_acquire)) return k.on.load(std::memory_order_acquire);
  std::lock_guard lock(k.mutex);
  readKeyFile(k);
  return k.on;
}

Status keyProblem() {
  Key& k = key();
  std::lock_guard lock(k.mutex);
  readKeyFile(k);
  return k.problem;
}

Status setKey(const char* secret) {
  if (secret != nullptr) {
    CHORUS_TRY(checkLength(strlen(secret), "the key"));
    if (!built()) return invalidUsage("this chorus was built without OpenSSL 3 (libssl-dev): TLS is not available");
  }
  Key& k = key();
  std::lock_guard lock(k.mutex);
  k.chosen = true;
  k.problem = Status::ok();
  k.secret = secret ? secret : "";
  k.on = secret != nullptr;
  k.settled = true;
  return Status::ok();
}

#ifdef CHORUS_HAVE_OPENSSL

namespace {

constexpr unsigned char kIdentity[] = "chorus-psk-1";
constexpr unsigned char kAes128GcmSha256[] = {0x13, 0x01};

std::string opensslError() {
  unsigned long code = ERR_get_error();
  if (code == 0) return "no detail from OpenSSL";
  char text[256];
  ERR_error_string_n(code, text, sizeof(text));
  return text;
}

// The TLS key: HKDF-SHA256 of the secret, so a secret of any length >= 32 bytes gives the 32 bytes TLS takes.
Status deriveKey(const std::string& secret, unsigned char out[32]) {
  EVP_KDF* kdf = EVP_KDF_fetch(nullptr, "HKDF", nullptr);
  EVP_KDF_CTX* ctx = kdf ? EVP_KDF_CTX_new(kdf) : nullptr;
  static const char kInfo[] = "chorus tls pre-shared key";
  OSSL_PARAM params[] = {
      OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, const_cast<char*>("SHA256"), 0),
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, const_cast<char*>(secret.data()), secret.size()),
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, const_cast<char*>(kInfo), sizeof(kInfo) - 1),
      OSSL_PARAM_construct_end()};
  const bool ok = ctx && EVP_KDF_derive(ctx, out, 32, params) == 1;
  EVP_KDF_CTX_free(ctx);
  EVP_KDF_free(kdf);
  return ok ? Status::ok() : systemError("TLS key derivation (HKDF-SHA256): " + opensslError());
}

// The session TLS resumes from the key: what both ends of an external PSK agree on.
SSL_SESSION* keySession(SSL* ssl) {
  unsigned char derived[32];
  {
    Key& k = key();
    std::lock_guard lock(k.mutex);
    if (k.secret.empty() || !deriveKey(k.secret, derived).isOk()) return nullptr;
  }
  const SSL_CIPHER* cipher = SSL_CIPHER_find(ssl, kAes128GcmSha256);
  SSL_SESSION* s = SSL_SESSION_new();
  if (!s || !cipher || SSL_SESSION_set1_master_key(s, derived, sizeof(derived)) != 1 ||
      SSL_SESSION_set_cipher(s, cipher) != 1 || SSL_SESSION_set_protocol_version(s, TLS1_3_VERSION) != 1) {
    SSL_SESSION_free(s);
    s = nullptr;
  }
  OPENSSL_cleanse(derived, sizeof(derived));
  return s;
}

int useKey(SSL* ssl, const EVP_MD*, const unsigned char** id, size_t* idLen, SSL_SESSION** session) {
  *id = kIdentity;
  *idLen = sizeof(kIdentity) - 1;
  *session = keySession(ssl);
  return *session != nullptr;
}

int findKey(SSL* ssl, const unsigned char* id, size_t idLen, SSL_SESSION** session) {
  *session = nullptr;
  if (idLen != sizeof(kIdentity) - 1 || CRYPTO_memcmp(id, kIdentity, idLen) != 0) return 0;
  *session = keySession(ssl);
  return *session != nullptr;
}

// The socket under a session, written with MSG_NOSIGNAL (OpenSSL's own socket BIO write()s, and a peer that left
// would raise SIGPIPE in the caller's process) and MSG_DONTWAIT (whatever the descriptor's blocking mode).
int bioWrite(BIO* bio, const char* data, int bytes) {
  BIO_clear_retry_flags(bio);
  const int fd = static_cast<int>(reinterpret_cast<intptr_t>(BIO_get_data(bio)));
  const ssize_t n = ::send(fd, data, static_cast<size_t>(bytes), MSG_DONTWAIT | MSG_NOSIGNAL);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) BIO_set_retry_write(bio);
  return static_cast<int>(n);
}
int bioRead(BIO* bio, char* data, int bytes) {
  BIO_clear_retry_flags(bio);
  const int fd = static_cast<int>(reinterpret_cast<intptr_t>(BIO_get_data(bio)));
  const ssize_t n = ::recv(fd, data, static_cast<size_t>(bytes), MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) BIO_set_retry_read(bio);
  return static_cast<int>(n);
}
long bioCtrl(BIO*, int command, long, void*) { return command == BIO_CTRL_FLUSH ? 1 : 0; }
int bioCreate(BIO* bio) {
  BIO_set_init(bio, 1);
  return 1;
}

struct Library {
  BIO_METHOD* bio = nullptr;
  SSL_CTX* client = nullptr;
  SSL_CTX* server = nullptr;
  Status status;
};

// TLS 1.3 only, one cipher suite, the key's session as the only way in: no certificates (the client accepts none,
// the server has none), no session tickets (each connection derives its own keys from the PSK and an ECDHE share).
const Library& library() {
  static Library* lib = [] {
    auto* l = new Library;  // never destroyed: sockets may close during static destruction
    l->bio = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "chorus socket");
    if (!l->bio || BIO_meth_set_write(l->bio, bioWrite) != 1 || BIO_meth_set_read(l->bio, bioRead) != 1 ||
        BIO_meth_set_ctrl(l->bio, bioCtrl) != 1 || BIO_meth_set_create(l->bio, bioCreate) != 1) {
      l->status = systemError("TLS: OpenSSL socket method: " + opensslError());
      return l;
    }
    for (SSL_CTX** ctx : {&l->client, &l->server}) {
      *ctx = SSL_CTX_new(TLS_method());
      if (!*ctx || SSL_CTX_set_min_proto_version(*ctx, TLS1_3_VERSION) != 1 ||
          SSL_CTX_set_max_proto_version(*ctx, TLS1_3_VERSION) != 1 ||
          SSL_CTX_set_ciphersuites(*ctx, "TLS_AES_128_GCM_SHA256") != 1) {
        l->status = systemError("TLS: OpenSSL context: " + opensslError());
        return l;
      }
      SSL_CTX_set_options(*ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
      SSL_CTX_set_mode(*ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
      // Reading ahead into a buffer of several records takes them in one recv() instead of two per record: 1 MiB
      // AllReduces over tcp took a quarter less time (docs/transports.md#tls has the command).
      SSL_CTX_set_read_ahead(*ctx, 1);
      SSL_CTX_set_default_read_buffer_len(*ctx, 64 << 10);
    }
    SSL_CTX_set_verify(l->client, SSL_VERIFY_PEER, nullptr);
    SSL_CTX_set_psk_use_session_callback(l->client, useKey);
    SSL_CTX_set_psk_find_session_callback(l->server, findKey);
    SSL_CTX_set_num_tickets(l->server, 0);
    return l;
  }();
  return *lib;
}

struct Session {
  SSL* ssl = nullptr;
  std::mutex mutex;  // OpenSSL's connection objects are not for two threads at once
  std::string peer;
  bool established = false;
  ~Session() { SSL_free(ssl); }
};

struct Table {
  std::shared_mutex mutex;
  std::unordered_map<int, std::unique_ptr<Session>> sessions;
  std::atomic<size_t> count{0};
};
Table& table() {
  static Table* t = new Table;  // never destroyed: sockets may close during static destruction
  return *t;
}

Session* find(int fd) {
  Table& t = table();
  if (t.count.load(std::memory_order_acquire) == 0) return nullptr;
  std::shared_lock lock(t.mutex);
  auto it = t.sessions.find(fd);
  return it == t.sessions.end() ? nullptr : it->second.get();
}

Status open(int fd, Role role, Session** out) {
  CHORUS_TRY(keyProblem());
  const Library& lib = library();
  CHORUS_TRY(lib.status);
  auto s = std::make_unique<Session>();
  s->peer = peerOf(fd);
  s->ssl = SSL_new(role == Role::kClient ? lib.client : lib.server);
  BIO* bio = s->ssl ? BIO_new(lib.bio) : nullptr;
  if (!bio) return systemError("TLS: a session for " + s->peer + ": " + opensslError());
  BIO_set_data(bio, reinterpret_cast<void*>(static_cast<intptr_t>(fd)));
  SSL_set_bio(s->ssl, bio, bio);
  if (role == Role::kClient) {
    SSL_set_connect_state(s->ssl);
  } else {
    SSL_set_accept_state(s->ssl);
  }
  Table& t = table();
  std::unique_lock lock(t.mutex);
  *out = s.get();
  t.sessions[fd] = std::move(s);
  t.count = t.sessions.size();
  return Status::ok();
}

// errno for a failed SSL_read/SSL_write; 0 for a peer that closed.
int failure(Session& s, int rc, const char* what) {
  const int e = SSL_get_error(s.ssl, rc);
  if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return EAGAIN;
  if (e == SSL_ERROR_ZERO_RETURN) return 0;
  if (e == SSL_ERROR_SYSCALL && errno != 0) return errno;
  if (e == SSL_ERROR_SYSCALL) return 0;
  CHORUS_WARN(kTransport, "TLS %s %s failed: %s", what, s.peer.c_str(), opensslError().c_str());
  return EPROTO;
}

}  // namespace

bool built() { return true; }

Status handshakeStep(int fd, Role role, bool* done) {
  *done = false;
  Session* s = find(fd);
  if (!s) CHORUS_TRY(open(fd, role, &s));
  std::lock_guard lock(s->mutex);
  if (s->established) {
    *done = true;
    return Status::ok();
  }
  ERR_clear_error();
  errno = 0;
  const int rc = SSL_do_handshake(s->ssl);
  if (rc == 1) {
    // A client also offers a certificate handshake; only one that used the key proves the peer holds it.
    if (SSL_session_reused(s->ssl) != 1)
      return remoteError("TLS handshake with " + s->peer + " did not use the pre-shared key");
    s->established = true;
    *done = true;
    return Status::ok();
  }
  const int e = SSL_get_error(s->ssl, rc);
  if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return Status::ok();
  if (e == SSL_ERROR_ZERO_RETURN || e == SSL_ERROR_SYSCALL) {
    return remoteError(s->peer + " closed the connection during the TLS handshake (it does not use TLS, or holds " +
                       "another key)");
  }
  return remoteError("TLS handshake with " + s->peer + " failed: " + opensslError() +
                     " (the peer does not speak TLS, or holds another key)");
}

Status handshake(int fd, Role role, const Deadline& deadline) {
  while (true) {
    bool done = false;
    CHORUS_TRY(handshakeStep(fd, role, &done));
    if (done) return Status::ok();
    Session* s = find(fd);
    pollfd p{fd, static_cast<short>(SSL_want_write(s->ssl) ? POLLOUT : POLLIN), 0};
    if (poll(&p, 1, deadline.remainingMs()) == 0 && deadline.expired()) {
      return deadline.cancelled()
                 ? remoteError("TLS handshake with " + s->peer + ": cancelled")
                 : timeoutError("TLS handshake with " + s->peer + " did not finish before the timeout");
    }
  }
}

ssize_t send(int fd, const void* data, size_t bytes) {
  Session* s = find(fd);
  if (!s) return ::send(fd, data, bytes, MSG_DONTWAIT | MSG_NOSIGNAL);
  std::lock_guard lock(s->mutex);
  size_t written = 0;
  ERR_clear_error();
  errno = 0;
  const int rc = SSL_write_ex(s->ssl, data, bytes, &written);
  if (rc == 1) return static_cast<ssize_t>(written);
  const int e = failure(*s, rc, "send to");
  errno = e == 0 ? EPIPE : e;
  return -1;
}

ssize_t recv(int fd, void* data, size_t bytes) {
  Session* s = find(fd);
  if (!s) return ::recv(fd, data, bytes, MSG_DONTWAIT);
  std::lock_guard lock(s->mutex);
  size_t got = 0;
  ERR_clear_error();
  errno = 0;
  const int rc = SSL_read_ex(s->ssl, data, bytes, &got);
  if (rc == 1) return static_cast<ssize_t>(got);
  const int e = failure(*s, rc, "receive from");
  if (e == 0) return 0;
  errno = e;
  return -1;
}

bool buffered(int fd) {
  Session* s = find(fd);
  if (!s) return false;
  std::lock_guard lock(s->mutex);
  return SSL_has_pending(s->ssl) == 1;
}

void release(int fd) {
  Table& t = table();
  if (t.count.load(std::memory_order_acquire) == 0) return;
  std::unique_lock lock(t.mutex);
  t.sessions.erase(fd);
  t.count = t.sessions.size();
}

#else  // built without OpenSSL: setKey refuses a key, and a key file fails the first connection.

bool built() { return false; }
Status handshakeStep(int, Role, bool*) {
  CHORUS_TRY(keyProblem());
  return invalidUsage("TLS: this chorus was built without OpenSSL 3");
}
Status handshake(int fd, Role role, const Deadline&) {
  bool done = false;
  return handshakeStep(fd, role, &done);
}
ssize_t send(int fd, const void* data, size_t bytes) { return ::send(fd, data, bytes, MSG_DONTWAIT | MSG_NOSIGNAL); }
ssize_t recv(int fd, void* data, size_t bytes) { return ::recv(fd, data, bytes, MSG_DONTWAIT); }
bool buffered(int) { return false; }
void release(int) {}

#endif

}  // namespace chorus::net::tls

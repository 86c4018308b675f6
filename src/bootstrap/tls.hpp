// TLS 1.3 with a pre-shared key on chorus's own sockets: the rendezvous store's and the tcp transport's, for jobs
// whose traffic crosses a network they do not trust. Off unless a key is set (ncclSetEncryption, or the file named by
// CHORUS_TLS_PSK_FILE); then every connection this process makes or accepts starts with a TLS 1.3 handshake that
// only a holder of the same key completes, and every byte after it travels in AES-128-GCM records. A session belongs
// to its socket's descriptor, so the code that moves bytes stays as it is and calls send/recv here instead of the
// system's; closeFd ends the session.
#pragma once

#include <sys/types.h>

#include <cstddef>

#include "chorus/status.hpp"
#include "core/deadline.hpp"

namespace chorus::net::tls {

/// The shortest key accepted, in bytes (as NCCL asks of ncclSetEncryption's key).
inline constexpr size_t kMinKeyBytes = 32;

/// Whether this build can speak TLS (OpenSSL 3 was found when it was built).
bool built();
/// Sets the key of this process's new connections; nullptr returns to plaintext. Connections made before keep what
/// they have. A key shorter than kMinKeyBytes, or any key in a build without TLS, is refused.
Status setKey(const char* key);
/// Whether new connections use TLS: setKey was given a key, or CHORUS_TLS_PSK_FILE names a file holding one. An
/// unreadable or short file is an error of the first connection.
bool enabled();
/// Why enabled() cannot give a key (CHORUS_TLS_PSK_FILE unreadable or too short); ok otherwise.
Status keyProblem();

enum class Role { kClient, kServer };
/// One step of the handshake on a connected socket (the first makes its session); *done once it completed. Never
/// blocks. A peer that closes, speaks no TLS or holds another key is an error naming it.
Status handshakeStep(int fd, Role role, bool* done);
/// The whole handshake, bounded by `deadline`.
Status handshake(int fd, Role role, const Deadline& deadline);

/// send(2) and recv(2) with MSG_DONTWAIT | MSG_NOSIGNAL, through the socket's session when it has one: the bytes
/// moved, 0 when the peer closed (recv), or -1 with errno set (EAGAIN: nothing could move now; EPROTO: the session
/// failed, and a warning says why).
ssize_t send(int fd, const void* data, size_t bytes);
ssize_t recv(int fd, void* data, size_t bytes);
/// Whether the session holds bytes it read from the socket and has not returned: poll() does not see them, so a
/// reader asks this before it sleeps.
bool buffered(int fd);
/// Ends the socket's session, if any, sending nothing (net::closeFd calls it before close).
void release(int fd);

}  // namespace chorus::net::tls

// The socket BIO under the client's TLS: OpenSSL's own writes with write(2), which raises
// SIGPIPE when the server has closed; this one sends with MSG_NOSIGNAL, as the plaintext path
// does, so a closed peer is an error to report, never a signal that kills the process.
#pragma once

#include <openssl/bio.h>

namespace exch::net {

// A BIO reading and writing the connected, non-blocking socket `fd` (not closed by the BIO);
// null when OpenSSL is out of memory.
BIO* new_socket_bio(int fd);

}  // namespace exch::net

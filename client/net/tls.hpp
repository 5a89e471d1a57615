// TLS for the client, with OpenSSL: one shared context per run (trust anchors, the client
// certificate, the last session of each server) and one stream per connection. A stream is
// non-blocking and waits with poll under the caller's deadlines, as the plaintext path does.
#pragma once

#include <openssl/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "net/deadline.hpp"

typedef struct ssl_session_st SSL_SESSION;  // <openssl/ssl.h>, left out of this header

namespace exch::net {

struct TlsOptions {
  bool enabled = false;
  std::string ca_file;      // PEM trust anchors for the server; empty: the system store
  std::string cert_file;    // client certificate chain (PEM) for mutual TLS, with key_file
  std::string key_file;     // its private key (PEM, unencrypted)
  std::string server_name;  // the name to verify and send (SNI); empty: the host dialled
  bool resume = true;       // offer each server a session it gave before (resumption)
  bool max_tls12 = false;   // offer TLS 1.2 only: session-id resumption, no key exchange
};

// A file or setting OpenSSL refused: the message names it and gives OpenSSL's reason.
class TlsSetupError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The shared client context: TLS 1.2 minimum, the server verified (chain and name). Thread-safe.
class TlsClient {
 public:
  // Throws TlsSetupError.
  static std::shared_ptr<TlsClient> create(const TlsOptions& options);
  ~TlsClient();
  TlsClient(const TlsClient&) = delete;
  TlsClient& operator=(const TlsClient&) = delete;

  const TlsOptions& options() const { return options_; }
  struct Counts {
    std::uint64_t handshakes = 0;  // completed
    std::uint64_t resumed = 0;     // of which resumed a session (no certificate exchange)
  };
  Counts counts() const { return {handshakes_.load(), resumed_.load()}; }

 private:
  friend class TlsStream;
  explicit TlsClient(const TlsOptions& options);
  void load_files();
  // OpenSSL's new-session callback: a TLS 1.3 ticket arrives after the handshake.
  static int on_new_session(SSL* ssl, SSL_SESSION* session);
  void remember(const std::string& server, SSL_SESSION* session);  // takes the reference
  void offer(SSL* ssl, const std::string& server);                 // its newest session, if any
  void count(bool resumed);

  TlsOptions options_;
  SSL_CTX* ctx_ = nullptr;
  std::mutex mutex_;
  // By server (host:port), newest last. A TLS 1.3 ticket is used once (RFC 8446 C.4: a reused
  // one links connections, and a server may refuse it), so concurrent connections need
  // several; a TLS 1.2 session may be offered again and again.
  std::unordered_map<std::string, std::vector<SSL_SESSION*>> sessions_;
  std::atomic<std::uint64_t> handshakes_{0}, resumed_{0};
};

// One TLS connection over a connected, non-blocking socket that it does not own.
class TlsStream {
 public:
  // Handshakes as a client of `host` (verified against it, or against options().server_name)
  // within `deadline`. Throws NotSent naming `peer` and the reason: OpenSSL's, or why the
  // server's certificate did not verify.
  static std::unique_ptr<TlsStream> connect(std::shared_ptr<TlsClient> client, int fd,
                                            const std::string& host, const std::string& peer,
                                            Clock::time_point deadline);
  ~TlsStream();
  TlsStream(const TlsStream&) = delete;
  TlsStream& operator=(const TlsStream&) = delete;

  // Up to `size` bytes into `buffer`; 0 at the end of the stream (close_notify, or the server
  // closed TCP without it: the same EOF the plaintext path sees). Throws NetError.
  std::size_t read(char* buffer, std::size_t size, Clock::time_point deadline);
  // All of `bytes`, or throws NetError.
  void write(std::string_view bytes, Clock::time_point deadline);
  // Application data or the end of the stream is waiting (never blocks): on an idle session,
  // the server closed it. TLS records alone (a late session ticket) do not count.
  bool input_pending();
  // Sends close_notify if that needs no waiting; never after a failure.
  void shutdown();
  const std::string& peer() const { return peer_; }

 private:
  TlsStream(std::shared_ptr<TlsClient> client, int fd, std::string peer);
  void handshake(const std::string& host, Clock::time_point deadline);
  // After an SSL call failed with `err` (SSL_get_error): waits when OpenSSL wants the socket
  // readable or writable; throws otherwise: NetError "read from/write to PEER failed: why",
  // or NotSent when the server refused the client certificate.
  void wait_or_throw(int err, Clock::time_point deadline, bool writing);
  // Throws NotSent when OpenSSL's error queue holds the server's refusal of our certificate
  // (mutual TLS): it refused in its handshake, so its application saw nothing.
  void throw_if_certificate_refused();
  // After a failed write: reads (without waiting) an alert that may say why.
  void read_alert();

  std::shared_ptr<TlsClient> client_;
  SSL* ssl_ = nullptr;
  int fd_;
  std::string peer_;
  bool failed_ = false;
};

}  // namespace exch::net

#pragma once
// A blocking TLS client for the end-to-end tests (OpenSSL over a loopback socket, every read
// bounded): the server's TLS port as a real client meets it, with or without a client
// certificate, one-shot or in a session.
#include <openssl/ssl.h>

#include <stdexcept>
#include <string>

namespace testing_support {

// A session one connection got and the next one offers (TLS 1.2 session-id resumption).
struct TlsResumption {
  TlsResumption() = default;
  TlsResumption(const TlsResumption&) = delete;
  TlsResumption& operator=(const TlsResumption&) = delete;
  ~TlsResumption() { SSL_SESSION_free(session); }
  SSL_SESSION* session = nullptr;
};

struct TlsClientOptions {
  std::string ca;    // the CA that signed the server's certificate
  std::string cert;  // base path of a client certificate (PATH.crt, PATH.key); empty: none
  bool tls12_only = false;
  TlsResumption* resumption = nullptr;  // offered if it holds a session; this one kept after
};

// Thrown when the handshake fails: what() has OpenSSL's reason.
class TlsHandshakeFailed : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class TlsConnection {
 public:
  // Connects to 127.0.0.1:`port` and completes the handshake (TlsHandshakeFailed otherwise).
  TlsConnection(unsigned short port, const TlsClientOptions& options);
  ~TlsConnection();
  TlsConnection(const TlsConnection&) = delete;
  TlsConnection& operator=(const TlsConnection&) = delete;

  void write(const std::string& bytes);
  // Everything until the server closes (close_notify or TCP close), at most 20 s.
  std::string read_to_eof();
  std::string read_line();
  std::string read_exact(std::size_t n);
  // A framed request and its framed reply, on a session.
  std::string request(const std::string& xml);
  bool resumed() const { return SSL_session_reused(ssl_) == 1; }

 private:
  // Reads more into buffer_; false at the end of the stream.
  bool fill();
  int fd_ = -1;
  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
  std::string buffer_;
};

// One request on its own TLS connection: `bytes` as given (logon line and frame), the whole
// reply back.
std::string tls_send(unsigned short port, const TlsClientOptions& options,
                     const std::string& bytes);
std::string frame(const std::string& xml);

}  // namespace testing_support

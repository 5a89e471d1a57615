#include "support/tls_client.hpp"

#include <openssl/err.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <stdexcept>

#include "support/loopback.hpp"

namespace testing_support {
namespace {

std::string reason() {
  unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return "no OpenSSL reason (the peer closed)";
  char text[256];
  ERR_error_string_n(code, text, sizeof text);
  return text;
}

}  // namespace

std::string frame(const std::string& xml) { return std::to_string(xml.size()) + "\n" + xml; }

TlsConnection::TlsConnection(unsigned short port, const TlsClientOptions& options) {
  ctx_ = SSL_CTX_new(TLS_client_method());
  SSL_CTX_set_min_proto_version(ctx_, TLS1_2_VERSION);
  if (options.tls12_only) SSL_CTX_set_max_proto_version(ctx_, TLS1_2_VERSION);
  SSL_CTX_set_options(ctx_, SSL_OP_IGNORE_UNEXPECTED_EOF);
  if (SSL_CTX_load_verify_locations(ctx_, options.ca.c_str(), nullptr) != 1)
    throw std::runtime_error("cannot load CA " + options.ca + ": " + reason());
  SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER, nullptr);
  if (!options.cert.empty() &&
      (SSL_CTX_use_certificate_file(ctx_, (options.cert + ".crt").c_str(), SSL_FILETYPE_PEM) != 1 ||
       SSL_CTX_use_PrivateKey_file(ctx_, (options.cert + ".key").c_str(), SSL_FILETYPE_PEM) != 1))
    throw std::runtime_error("cannot load client certificate " + options.cert + ": " + reason());
  fd_ = connect_loopback(port);
  timeval tv{20, 0};  // tests never hang on a silent server
  ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  ssl_ = SSL_new(ctx_);
  SSL_set_fd(ssl_, fd_);
  SSL_set1_host(ssl_, "127.0.0.1");
  TlsResumption* r = options.resumption;
  if (r != nullptr && r->session != nullptr) SSL_set_session(ssl_, r->session);
  if (SSL_connect(ssl_) != 1) throw TlsHandshakeFailed("TLS handshake failed: " + reason());
  if (r != nullptr) {  // a TLS 1.2 session is complete here (1.3 sends its ticket later)
    SSL_SESSION_free(r->session);
    r->session = SSL_get1_session(ssl_);
  }
  // TLS 1.3: a client certificate the server refuses is reported on the first read, not by
  // SSL_connect; the tests see that as a read failure or EOF.
}

TlsConnection::~TlsConnection() {
  // Marked shut down (nothing is sent): freeing it otherwise makes its session unresumable.
  if (ssl_) SSL_set_shutdown(ssl_, SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
  if (ssl_) SSL_free(ssl_);
  if (ctx_) SSL_CTX_free(ctx_);
  if (fd_ >= 0) ::close(fd_);
}

void TlsConnection::write(const std::string& bytes) {
  std::size_t written = 0;
  if (!bytes.empty() && SSL_write_ex(ssl_, bytes.data(), bytes.size(), &written) != 1)
    throw std::runtime_error("TLS write failed: " + reason());
}

bool TlsConnection::fill() {
  char buf[16384];
  std::size_t n = 0;
  if (SSL_read_ex(ssl_, buf, sizeof buf, &n) == 1) {
    buffer_.append(buf, n);
    return true;
  }
  int err = SSL_get_error(ssl_, 0);
  if (err == SSL_ERROR_ZERO_RETURN) return false;
  if (err == SSL_ERROR_SYSCALL || err == SSL_ERROR_SSL) {
    ERR_clear_error();
    return false;  // a reset or a TCP close: the end, for what the tests look at
  }
  throw std::runtime_error("TLS read failed (timeout?)");
}

std::string TlsConnection::read_to_eof() {
  while (fill()) {
  }
  return std::move(buffer_);
}

std::string TlsConnection::read_line() {
  for (;;) {
    auto nl = buffer_.find('\n');
    if (nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return line;
    }
    if (!fill()) throw std::runtime_error("closed before a line: " + buffer_);
  }
}

std::string TlsConnection::read_exact(std::size_t n) {
  while (buffer_.size() < n)
    if (!fill()) throw std::runtime_error("closed inside a reply");
  std::string out = buffer_.substr(0, n);
  buffer_.erase(0, n);
  return out;
}

std::string TlsConnection::request(const std::string& xml) {
  write(frame(xml));
  return read_exact(std::stoul(read_line()));
}

std::string tls_send(unsigned short port, const TlsClientOptions& options,
                     const std::string& bytes) {
  TlsConnection c(port, options);
  c.write(bytes);
  return c.read_to_eof();
}

}  // namespace testing_support

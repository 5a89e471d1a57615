// TlsStream: one client TLS connection, non-blocking under deadlines (tls.hpp).
#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "net/errors.hpp"
#include "net/openssl_error.hpp"
#include "net/tls.hpp"
#include "net/tls_bio.hpp"

namespace exch::net {

namespace {

bool is_ip_literal(const std::string& host) {
  unsigned char address[16];
  return ::inet_pton(AF_INET, host.c_str(), address) == 1 ||
         ::inet_pton(AF_INET6, host.c_str(), address) == 1;
}

// The server must present a certificate for `name`: an IP address or a DNS name.
void expect_name(SSL* ssl, const std::string& name) {
  X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
  X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
  if (is_ip_literal(name)) {
    X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str());
  } else {
    X509_VERIFY_PARAM_set1_host(param, name.c_str(), 0);
    SSL_set_tlsext_host_name(ssl, name.c_str());
  }
}

// Why a handshake failed, for the user: the certificate check first, as it is the usual cause.
std::string handshake_failure(SSL* ssl) {
  long verify = SSL_get_verify_result(ssl);
  if (verify != X509_V_OK) {
    ERR_clear_error();
    return std::string("the server's certificate did not verify: ") +
           X509_verify_cert_error_string(verify);
  }
  unsigned long first = ERR_peek_error();
  std::string reason = openssl_reason("the server closed the connection");
  if (ERR_GET_LIB(first) == ERR_LIB_SSL && ERR_GET_REASON(first) == SSL_R_WRONG_VERSION_NUMBER)
    reason += " (does the server speak TLS?)";
  return reason;
}

// An alert in which the server refused this client's certificate (mutual TLS). In TLS 1.3 it
// arrives after the client's side of the handshake is done, on the first read; the server
// refused in its handshake, so its application never saw the request.
bool client_certificate_refused(unsigned long e) {
  if (ERR_GET_LIB(e) != ERR_LIB_SSL) return false;
  switch (ERR_GET_REASON(e)) {
    case SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED:
    case SSL_R_SSLV3_ALERT_BAD_CERTIFICATE:
    case SSL_R_SSLV3_ALERT_UNSUPPORTED_CERTIFICATE:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_REVOKED:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_EXPIRED:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN:
    case SSL_R_TLSV1_ALERT_UNKNOWN_CA:
      return true;
    default:
      return false;
  }
}

}  // namespace

TlsStream::TlsStream(std::shared_ptr<TlsClient> client, int fd, std::string peer)
    : client_(std::move(client)), fd_(fd), peer_(std::move(peer)) {}

TlsStream::~TlsStream() {
  if (ssl_ != nullptr) SSL_free(ssl_);  // frees the BIO too
}

std::unique_ptr<TlsStream> TlsStream::connect(std::shared_ptr<TlsClient> client, int fd,
                                              const std::string& host, const std::string& peer,
                                              Clock::time_point deadline) {
  std::unique_ptr<TlsStream> s(new TlsStream(std::move(client), fd, peer));
  s->handshake(host, deadline);
  return s;
}

void TlsStream::handshake(const std::string& host, Clock::time_point deadline) {
  ERR_clear_error();
  ssl_ = SSL_new(client_->ctx_);
  BIO* bio = ssl_ != nullptr ? new_socket_bio(fd_) : nullptr;
  if (bio == nullptr) throw NotSent("TLS with " + peer_ + ": " + openssl_reason());
  SSL_set_bio(ssl_, bio, bio);
  SSL_set_app_data(ssl_, this);  // for the new-session callback
  SSL_set_connect_state(ssl_);
  const std::string& name = client_->options().server_name;
  expect_name(ssl_, name.empty() ? host : name);
  client_->offer(ssl_, peer_);
  for (;;) {
    ERR_clear_error();
    errno = 0;
    int rc = SSL_connect(ssl_);
    if (rc == 1) break;
    int err = SSL_get_error(ssl_, rc);
    if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
      try {
        wait_for(fd_, err == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, deadline, peer_,
                 "in the TLS handshake with");
      } catch (const NetError& e) {
        throw NotSent(e.what());
      }
      continue;
    }
    failed_ = true;
    std::string why =
        err == SSL_ERROR_SYSCALL && errno != 0 ? std::strerror(errno) : handshake_failure(ssl_);
    throw NotSent("TLS handshake with " + peer_ + " failed: " + why);
  }
  client_->count(SSL_session_reused(ssl_) == 1);
}

void TlsStream::throw_if_certificate_refused() {
  if (!client_certificate_refused(ERR_peek_error())) return;
  failed_ = true;
  throw NotSent("TLS handshake with " + peer_ + " failed: the server refused the client " +
                "certificate (" + openssl_reason() + ")");
}

void TlsStream::read_alert() {
  char byte;
  std::size_t n = 0;
  ERR_clear_error();
  if (SSL_read_ex(ssl_, &byte, 1, &n) != 1 && SSL_get_error(ssl_, 0) == SSL_ERROR_SSL)
    throw_if_certificate_refused();
  ERR_clear_error();
}

void TlsStream::wait_or_throw(int err, Clock::time_point deadline, bool writing) {
  const char* what = writing ? "writing to" : "reading from";
  if (err == SSL_ERROR_WANT_READ) return wait_for(fd_, POLLIN, deadline, peer_, what);
  if (err == SSL_ERROR_WANT_WRITE) return wait_for(fd_, POLLOUT, deadline, peer_, what);
  const int saved_errno = errno;
  std::string why =
      err == SSL_ERROR_SYSCALL && saved_errno != 0 ? std::strerror(saved_errno) : std::string();
  if (err == SSL_ERROR_SSL) throw_if_certificate_refused();
  if (why.empty()) why = openssl_reason("connection lost");
  // A write that failed because the server refused us may have its reason waiting unread.
  if (writing) read_alert();
  failed_ = true;
  throw NetError(std::string(writing ? "write to " : "read from ") + peer_ + " failed: " + why);
}

std::size_t TlsStream::read(char* buffer, std::size_t size, Clock::time_point deadline) {
  if (failed_) throw NetError("read from " + peer_ + " after a TLS failure");
  for (;;) {
    std::size_t n = 0;
    ERR_clear_error();
    errno = 0;
    if (SSL_read_ex(ssl_, buffer, size, &n) == 1) return n;
    int err = SSL_get_error(ssl_, 0);
    if (err == SSL_ERROR_ZERO_RETURN) return 0;
    wait_or_throw(err, deadline, false);
  }
}

void TlsStream::write(std::string_view bytes, Clock::time_point deadline) {
  if (failed_) throw NetError("write to " + peer_ + " after a TLS failure");
  std::size_t done = 0;
  while (done < bytes.size()) {
    std::size_t n = 0;
    ERR_clear_error();
    errno = 0;
    // After WANT_WRITE, the same call again: same pointer, same length (OpenSSL requires it).
    if (SSL_write_ex(ssl_, bytes.data() + done, bytes.size() - done, &n) == 1) {
      done += n;
      continue;
    }
    wait_or_throw(SSL_get_error(ssl_, 0), deadline, true);
  }
}

bool TlsStream::input_pending() {
  if (failed_) return true;
  if (SSL_pending(ssl_) > 0) return true;  // decrypted bytes wait inside OpenSSL
  pollfd p{fd_, POLLIN, 0};
  // With read-ahead a record may wait undecrypted inside OpenSSL, not on the socket.
  if (SSL_has_pending(ssl_) == 0 && ::poll(&p, 1, 0) == 0) return false;
  char byte;
  std::size_t n = 0;
  ERR_clear_error();
  if (SSL_peek_ex(ssl_, &byte, 1, &n) == 1) return true;
  int err = SSL_get_error(ssl_, 0);
  if (err == SSL_ERROR_WANT_READ) return false;  // only TLS records, e.g. a session ticket
  if (err != SSL_ERROR_ZERO_RETURN) failed_ = true;
  ERR_clear_error();
  return true;
}

void TlsStream::shutdown() {
  if (ssl_ == nullptr || failed_ || !SSL_is_init_finished(ssl_)) return;
  ERR_clear_error();
  SSL_shutdown(ssl_);  // sends close_notify; does not wait for the server's
  ERR_clear_error();
}

}  // namespace exch::net

#include "support/staged_tls_client.hpp"

#include <openssl/err.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <stdexcept>

#include "support/loopback.hpp"

namespace testing_support {
namespace {

std::string reason() {
  unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return "no OpenSSL reason";
  char text[256];
  ERR_error_string_n(code, text, sizeof text);
  return text;
}

int remaining_ms(StagedTlsClient::Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline -
                                                                    StagedTlsClient::Clock::now())
                  .count();
  return static_cast<int>(std::max<long long>(0, left));
}

}  // namespace

StagedTlsClient::StagedTlsClient(unsigned short port, const TlsClientOptions& options,
                                 int max_version) {
  try {
    ctx_ = SSL_CTX_new(TLS_client_method());
    if (!ctx_) throw std::runtime_error("SSL_CTX_new failed: " + reason());
    SSL_CTX_set_min_proto_version(ctx_, TLS1_2_VERSION);
    SSL_CTX_set_max_proto_version(ctx_, max_version);
    if (SSL_CTX_load_verify_locations(ctx_, options.ca.c_str(), nullptr) != 1)
      throw std::runtime_error("cannot load CA " + options.ca + ": " + reason());
    SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER, nullptr);
    if (!options.cert.empty() &&
        (SSL_CTX_use_certificate_file(ctx_, (options.cert + ".crt").c_str(), SSL_FILETYPE_PEM) !=
             1 ||
         SSL_CTX_use_PrivateKey_file(ctx_, (options.cert + ".key").c_str(), SSL_FILETYPE_PEM) != 1))
      throw std::runtime_error("cannot load client certificate " + options.cert + ": " + reason());
    ssl_ = SSL_new(ctx_);
    if (!ssl_) throw std::runtime_error("SSL_new failed: " + reason());
    in_ = BIO_new(BIO_s_mem());
    out_ = BIO_new(BIO_s_mem());
    if (!in_ || !out_) {
      BIO_free(in_);
      BIO_free(out_);
      throw std::runtime_error("BIO_new failed: " + reason());
    }
    BIO_set_mem_eof_return(in_, -1);  // an empty input BIO means "wait", not EOF
    SSL_set_bio(ssl_, in_, out_);     // ssl_ owns both now
    SSL_set1_host(ssl_, "127.0.0.1");
    SSL_set_connect_state(ssl_);
    fd_ = connect_loopback(port);
  } catch (...) {
    release();
    throw;
  }
}

StagedTlsClient::~StagedTlsClient() { release(); }

void StagedTlsClient::release() {
  if (ssl_) SSL_free(ssl_);
  if (ctx_) SSL_CTX_free(ctx_);
  if (fd_ >= 0) ::close(fd_);
  ssl_ = nullptr;
  ctx_ = nullptr;
  fd_ = -1;
}

std::string StagedTlsClient::take_output() {
  std::string out;
  char buf[16384];
  int n;
  while ((n = BIO_read(out_, buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
  return out;
}

std::string StagedTlsClient::drive() {
  if (!done_) {
    ERR_clear_error();
    int rc = SSL_do_handshake(ssl_);
    if (rc == 1) {
      done_ = true;
    } else if (SSL_get_error(ssl_, rc) != SSL_ERROR_WANT_READ) {
      throw std::runtime_error("TLS handshake failed: " + reason());
    }
  }
  return take_output();
}

std::string StagedTlsClient::next_flight(std::chrono::milliseconds within) {
  const auto deadline = Clock::now() + within;
  for (;;) {
    std::string out = drive();
    if (!out.empty() || done_) return out;
    if (fd_ < 0) throw std::runtime_error("the connection is closed");
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, remaining_ms(deadline)) <= 0)
      throw std::runtime_error("no flight from the server within the deadline");
    char buf[16384];
    ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n <= 0) throw std::runtime_error("the server ended the connection inside the handshake");
    BIO_write(in_, buf, static_cast<int>(n));
  }
}

std::string StagedTlsClient::seal(const std::string& plaintext) {
  std::size_t written = 0;
  ERR_clear_error();
  if (SSL_write_ex(ssl_, plaintext.data(), plaintext.size(), &written) != 1)
    throw std::runtime_error("TLS write failed: " + reason());
  return take_output();
}

bool StagedTlsClient::send(const std::string& bytes) {
  std::size_t sent = 0;
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (sent < bytes.size()) {
    ssize_t n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      sent += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return false;
    if (Clock::now() >= deadline) return false;
    pollfd p{fd_, POLLOUT, 0};
    ::poll(&p, 1, remaining_ms(deadline));
  }
  return true;
}

bool StagedTlsClient::ended_within(std::chrono::milliseconds within) {
  const auto deadline = Clock::now() + within;
  for (;;) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, remaining_ms(deadline)) > 0) {
      char buf[16384];
      if (::recv(fd_, buf, sizeof buf, 0) <= 0) return true;
    } else if (Clock::now() >= deadline) {
      return false;
    }
  }
}

void StagedTlsClient::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void StagedTlsClient::reset() {
  if (fd_ < 0) return;
  linger l{1, 0};
  ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &l, sizeof l);
  close();
}

std::vector<std::string> StagedTlsClient::records(const std::string& bytes) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at < bytes.size()) {
    std::size_t size = bytes.size() - at;
    if (size >= 5) {
      const auto hi = static_cast<unsigned char>(bytes[at + 3]);
      const auto lo = static_cast<unsigned char>(bytes[at + 4]);
      size = std::min(size, 5 + (static_cast<std::size_t>(hi) << 8 | lo));
    }
    out.push_back(bytes.substr(at, size));
    at += size;
  }
  return out;
}

}  // namespace testing_support

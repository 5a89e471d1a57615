#include "net/blocking_stream.hpp"

#include <fcntl.h>
#include <openssl/err.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>

#include "net/tls_context.hpp"

namespace net {

int poll_timeout(BlockingStream::Clock::time_point deadline) {
  if (deadline == BlockingStream::kNoDeadline) return 60000;
  auto left =
      std::chrono::ceil<std::chrono::milliseconds>(deadline - BlockingStream::Clock::now()).count();
  // In slices of at most a minute: poll() takes an int, --read-timeout-ms may not fit.
  return static_cast<int>(std::clamp<long long>(left, 0, 60000));
}

void discard_pending_input(int fd) {
  char buf[16384];
  for (int reads = 0; reads < 16; ++reads)
    if (::recv(fd, buf, sizeof buf, MSG_DONTWAIT) <= 0) return;
}

BlockingStream::BlockingStream(int fd, TlsContext* tls) : fd_(fd) {
  if (!tls) return;
  ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) | O_NONBLOCK);
  ssl_ = SSL_new(tls->native());
  if (!ssl_ || SSL_set_fd(ssl_, fd_) != 1) {
    SSL_free(ssl_);
    ERR_clear_error();
    throw std::bad_alloc();
  }
}

BlockingStream::~BlockingStream() { SSL_free(ssl_); }

bool BlockingStream::wait(bool for_write, Clock::time_point deadline) {
  if (Clock::now() >= deadline) return false;
  pollfd p{fd_, static_cast<short>(for_write ? POLLOUT : POLLIN), 0};
  ::poll(&p, 1, poll_timeout(deadline));
  return true;
}

BlockingStream::Io BlockingStream::handshake(Clock::time_point deadline) {
  if (!ssl_) return Io::Done;
  for (;;) {
    ERR_clear_error();
    int rc = SSL_accept(ssl_);
    if (rc == 1) return Io::Done;
    int err = SSL_get_error(ssl_, rc);
    if (err != SSL_ERROR_WANT_READ && err != SSL_ERROR_WANT_WRITE) {
      ERR_clear_error();
      return Io::Failed;  // not TLS, a certificate that does not verify, a reset
    }
    if (!wait(err == SSL_ERROR_WANT_WRITE, deadline)) return Io::TimedOut;
  }
}

std::string BlockingStream::certificate_name() const {
  return ssl_ ? net::certificate_name(ssl_) : std::string();
}

bool BlockingStream::wait_readable(Clock::time_point deadline) {
  if (ssl_ && SSL_pending(ssl_) > 0) return true;
  pollfd p{fd_, static_cast<short>(wants_write_ ? POLLOUT : POLLIN), 0};
  return ::poll(&p, 1, poll_timeout(deadline)) > 0;
}

BlockingStream::Read BlockingStream::read(char* buf, std::size_t size, std::size_t& got) {
  got = 0;
  if (!ssl_) {
    ssize_t n = ::recv(fd_, buf, size, MSG_DONTWAIT);
    if (n > 0) got = static_cast<std::size_t>(n);
    if (n > 0) return Read::Data;
    if (n == 0) return Read::Eof;
    return errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK ? Read::Again : Read::Failed;
  }
  ERR_clear_error();
  wants_write_ = false;
  if (SSL_read_ex(ssl_, buf, size, &got) == 1) return Read::Data;
  switch (SSL_get_error(ssl_, 0)) {
    case SSL_ERROR_WANT_READ:
      return Read::Again;
    case SSL_ERROR_WANT_WRITE:
      wants_write_ = true;
      return Read::Again;
    case SSL_ERROR_ZERO_RETURN:
      return Read::Eof;  // close_notify
    default:
      ERR_clear_error();
      return Read::Failed;  // a reset, a TCP close without close_notify, garbage
  }
}

BlockingStream::Io BlockingStream::write_all(const std::string& bytes, Clock::time_point deadline) {
  std::size_t sent = 0;
  while (sent < bytes.size()) {
    bool want_read = false;
    if (ssl_) {
      ERR_clear_error();
      std::size_t n = 0;
      if (SSL_write_ex(ssl_, bytes.data() + sent, bytes.size() - sent, &n) == 1) {
        sent += n;
        continue;
      }
      int err = SSL_get_error(ssl_, 0);
      if (err != SSL_ERROR_WANT_WRITE && err != SSL_ERROR_WANT_READ) {
        ERR_clear_error();
        return Io::Failed;
      }
      want_read = err == SSL_ERROR_WANT_READ;
    } else {
      ssize_t n =
          ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) {
        sent += static_cast<std::size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (!(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)))
        return Io::Failed;  // EPIPE, ECONNRESET, ...: the peer is gone
    }
    if (!wait(!want_read, deadline)) return Io::TimedOut;
  }
  return Io::Done;
}

void BlockingStream::close_notify() {
  if (!ssl_) return;
  ERR_clear_error();
  SSL_shutdown(ssl_);  // one attempt: the close_notify goes out if the socket takes it
  ERR_clear_error();
}

}  // namespace net

#include "net/connection.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "net/framing.hpp"
#include "net/tls.hpp"

namespace exch::net {

namespace {

std::string errno_text(int err) { return std::strerror(err); }

// A TCP connection to one of the endpoint's addresses within `deadline`, or -1 with the
// last reason in `error`.
int connect_tcp(const Endpoint& endpoint, Clock::time_point deadline,
                std::chrono::milliseconds timeout, std::string& error) {
  error = "no address";
  for (const auto& address : endpoint.addresses()) {
    int fd = ::socket(address.family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      error = "socket: " + errno_text(errno);
      continue;
    }
    int rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&address.storage), address.length);
    int err = rc == 0 ? 0 : errno;
    if (err == EINPROGRESS) {
      try {
        wait_for(fd, POLLOUT, deadline, endpoint.name(), "connecting to");
        socklen_t len = sizeof err;
        if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
      } catch (const NetError&) {
        ::close(fd);
        error = "connect timeout after " + std::to_string(timeout.count()) + " ms";
        continue;
      }
    }
    if (err != 0) {
      ::close(fd);
      error = errno_text(err);
      continue;
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
  }
  return -1;
}

}  // namespace

Connection::Connection() = default;

Connection::~Connection() { close(); }

Connection::Connection(Connection&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      tls_(std::move(other.tls_)),
      buffer_(std::move(other.buffer_)),
      peer_(std::move(other.peer_)) {}

Connection& Connection::operator=(Connection&& other) noexcept {
  if (this != &other) {
    close();
    fd_ = std::exchange(other.fd_, -1);
    tls_ = std::move(other.tls_);
    buffer_ = std::move(other.buffer_);
    peer_ = std::move(other.peer_);
  }
  return *this;
}

void Connection::close() {
  if (tls_) {
    tls_->shutdown();
    tls_.reset();
  }
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
  buffer_.clear();
}

Connection Connection::open(const Endpoint& endpoint, std::chrono::milliseconds timeout) {
  return open(endpoint, ConnectOptions(Timeouts{timeout, Timeouts{}.read}));
}

Connection Connection::open(const Endpoint& endpoint, const ConnectOptions& options) {
  const auto timeout = options.timeouts.connect;
  const auto deadline = Clock::now() + timeout;
  std::string error;
  Connection c;
  c.fd_ = connect_tcp(endpoint, deadline, timeout, error);
  if (c.fd_ < 0) throw NotSent("cannot connect to " + endpoint.name() + ": " + error);
  c.peer_ = endpoint.name();
  if (options.tls)
    c.tls_ = TlsStream::connect(options.tls, c.fd_, endpoint.host(), c.peer_, deadline);
  return c;
}

void Connection::write_all(std::string_view bytes, Clock::time_point deadline) {
  if (fd_ < 0) throw NetError("write on closed connection to " + peer_);
  if (tls_) {
    try {
      tls_->write(bytes, deadline);
    } catch (const NetError&) {
      close();
      throw;
    }
    return;
  }
  std::size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n > 0) {
      done += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      wait_for(fd_, POLLOUT, deadline, peer_, "writing to");
      continue;
    }
    int err = errno;
    close();
    throw NetError("write to " + peer_ + " failed: " + errno_text(err));
  }
}

std::size_t Connection::receive(char* chunk, std::size_t size, Clock::time_point deadline) {
  if (tls_) return tls_->read(chunk, size, deadline);
  for (;;) {
    ssize_t n = ::recv(fd_, chunk, size, 0);
    if (n >= 0) return static_cast<std::size_t>(n);
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      wait_for(fd_, POLLIN, deadline, peer_, "reading from");
      continue;
    }
    int err = errno;
    throw NetError("read from " + peer_ + " failed: " + errno_text(err));
  }
}

bool Connection::fill(Clock::time_point deadline) {
  char chunk[16384];
  std::size_t n = receive(chunk, sizeof chunk, deadline);
  buffer_.append(chunk, n);
  return n > 0;
}

std::string Connection::read_until_eof(Clock::time_point deadline, std::size_t max_bytes) {
  if (fd_ < 0) throw NetError("read on closed connection to " + peer_);
  try {
    while (fill(deadline)) {
      if (buffer_.size() > max_bytes)
        throw NetError("reply from " + peer_ + " exceeds " + std::to_string(max_bytes) + " bytes");
    }
  } catch (...) {
    close();
    throw;
  }
  std::string out = std::move(buffer_);
  close();
  return out;
}

std::string Connection::read_line(Clock::time_point deadline, std::size_t max_bytes,
                                  bool& eof_before_newline) {
  eof_before_newline = false;
  if (fd_ < 0) throw NetError("read on closed connection to " + peer_);
  std::size_t scanned = 0;
  for (;;) {
    auto pos = buffer_.find('\n', scanned);
    if (pos != std::string::npos) {
      std::string line = buffer_.substr(0, pos);
      buffer_.erase(0, pos + 1);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      return line;
    }
    scanned = buffer_.size();
    if (buffer_.size() > max_bytes) {
      std::string head = buffer_.substr(0, max_bytes);
      close();
      throw NetError("line from " + peer_ + " longer than " + std::to_string(max_bytes) +
                     " bytes: " + printable_excerpt(head));
    }
    bool more;
    try {
      more = fill(deadline);
    } catch (...) {
      close();
      throw;
    }
    if (!more) {
      eof_before_newline = true;
      std::string partial = std::move(buffer_);
      close();
      return partial;
    }
  }
}

std::string Connection::read_exact(std::size_t n, Clock::time_point deadline) {
  if (fd_ < 0) throw NetError("read on closed connection to " + peer_);
  try {
    while (buffer_.size() < n) {
      if (!fill(deadline))
        throw NetError(peer_ + " closed the connection after " + std::to_string(buffer_.size()) +
                       " of " + std::to_string(n) + " announced bytes");
    }
  } catch (...) {
    close();
    throw;
  }
  std::string out = buffer_.substr(0, n);
  buffer_.erase(0, n);
  return out;
}

bool Connection::idle_input_pending() const {
  if (fd_ < 0) return true;
  if (!buffer_.empty()) return true;
  if (tls_) return tls_->input_pending();
  pollfd p{fd_, POLLIN, 0};
  return ::poll(&p, 1, 0) != 0;  // readable, hung up, or poll failed
}

std::string Connection::read_some_quietly(Clock::time_point deadline, std::size_t limit) {
  try {
    while (fd_ >= 0 && buffer_.size() < limit && fill(deadline)) {
    }
  } catch (const std::exception&) {
  }
  std::string out = std::move(buffer_);
  buffer_.clear();
  return out;
}

}  // namespace exch::net

#include "net/connection.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "net/framing.hpp"
#include "wire/session_hello.hpp"

namespace exch::net {

namespace {

std::string errno_text(int err) { return std::strerror(err); }

int remaining_ms(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  if (left.count() <= 0) return 0;
  if (left.count() > 1000 * 1000 * 1000) return 1000 * 1000 * 1000;
  // round up so that a sub-millisecond remainder still waits
  return static_cast<int>(left.count()) + 1;
}

// Waits until fd is ready for `events`; throws on timeout.
void wait_for(int fd, short events, Clock::time_point deadline, const std::string& peer,
              const char* what) {
  for (;;) {
    pollfd p{fd, events, 0};
    int ms = remaining_ms(deadline);
    if (ms == 0) throw NetError("timeout " + std::string(what) + " " + peer);
    int rc = ::poll(&p, 1, ms);
    if (rc > 0) return;     // readable/writable or error: the next syscall tells
    if (rc == 0) continue;  // loop re-checks the deadline
    if (errno == EINTR) continue;
    throw NetError("poll failed on " + peer + ": " + errno_text(errno));
  }
}

}  // namespace

void split_host_port(const std::string& text, std::uint16_t default_port, std::string& host,
                     std::uint16_t& port) {
  port = default_port;
  std::string port_text;
  if (!text.empty() && text.front() == '[') {
    auto close = text.find(']');
    if (close == std::string::npos) throw std::invalid_argument("bad address: " + text);
    host = text.substr(1, close - 1);
    if (close + 1 < text.size()) {
      if (text[close + 1] != ':') throw std::invalid_argument("bad address: " + text);
      port_text = text.substr(close + 2);
    }
  } else {
    auto colon = text.rfind(':');
    if (colon != std::string::npos && text.find(':') == colon) {
      host = text.substr(0, colon);
      port_text = text.substr(colon + 1);
    } else {
      host = text;
    }
  }
  if (host.empty()) throw std::invalid_argument("missing host in: " + text);
  if (!port_text.empty()) {
    unsigned long value = 0;
    for (char c : port_text) {
      if (c < '0' || c > '9' || value > 65535) throw std::invalid_argument("bad port in: " + text);
      value = value * 10 + static_cast<unsigned long>(c - '0');
    }
    if (value == 0 || value > 65535) throw std::invalid_argument("bad port in: " + text);
    port = static_cast<std::uint16_t>(value);
  }
}

Endpoint Endpoint::resolve(const std::string& host, std::uint16_t port) {
  Endpoint e;
  e.host_ = host;
  e.port_ = port;
  e.name_ =
      (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* result = nullptr;
  std::string service = std::to_string(port);
  int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &result);
  if (rc != 0) throw NetError("cannot resolve " + e.name_ + ": " + ::gai_strerror(rc));
  for (addrinfo* ai = result; ai != nullptr; ai = ai->ai_next) {
    Address a;
    std::memcpy(&a.storage, ai->ai_addr, ai->ai_addrlen);
    a.length = static_cast<socklen_t>(ai->ai_addrlen);
    a.family = ai->ai_family;
    e.addresses_.push_back(a);
  }
  ::freeaddrinfo(result);
  if (e.addresses_.empty()) throw NetError("no address for " + e.name_);
  return e;
}

Connection::~Connection() { close(); }

Connection::Connection(Connection&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      buffer_(std::move(other.buffer_)),
      peer_(std::move(other.peer_)) {}

Connection& Connection::operator=(Connection&& other) noexcept {
  if (this != &other) {
    close();
    fd_ = std::exchange(other.fd_, -1);
    buffer_ = std::move(other.buffer_);
    peer_ = std::move(other.peer_);
  }
  return *this;
}

void Connection::close() {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
  buffer_.clear();
}

Connection Connection::open(const Endpoint& endpoint, std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  std::string last_error = "no address";
  for (const auto& address : endpoint.addresses()) {
    int fd = ::socket(address.family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      last_error = "socket: " + errno_text(errno);
      continue;
    }
    Connection c;
    c.fd_ = fd;
    c.peer_ = endpoint.name();
    int rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&address.storage), address.length);
    if (rc != 0 && errno != EINPROGRESS) {
      last_error = errno_text(errno);
      continue;
    }
    if (rc != 0) {
      try {
        wait_for(fd, POLLOUT, deadline, c.peer_, "connecting to");
      } catch (const NetError&) {
        last_error = "connect timeout after " + std::to_string(timeout.count()) + " ms";
        continue;
      }
      int err = 0;
      socklen_t len = sizeof err;
      if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
      if (err != 0) {
        last_error = errno_text(err);
        continue;
      }
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return c;
  }
  throw NotSent("cannot connect to " + endpoint.name() + ": " + last_error);
}

void Connection::write_all(std::string_view bytes, Clock::time_point deadline) {
  if (fd_ < 0) throw NetError("write on closed connection to " + peer_);
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

bool Connection::fill(Clock::time_point deadline) {
  char chunk[16384];
  for (;;) {
    ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
    if (n > 0) {
      buffer_.append(chunk, static_cast<std::size_t>(n));
      return true;
    }
    if (n == 0) return false;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      wait_for(fd_, POLLIN, deadline, peer_, "reading from");
      continue;
    }
    int err = errno;
    throw NetError("read from " + peer_ + " failed: " + errno_text(err));
  }
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

std::string request_once(const Endpoint& endpoint, std::string_view xml, const Timeouts& t) {
  Connection c = Connection::open(endpoint, t.connect);
  auto deadline = Clock::now() + t.read;
  try {
    c.write_all(frame_request(xml), deadline);
  } catch (const NetError& e) {
    throw NotSent(e.what());
  }
  std::string reply;
  try {
    reply = c.read_until_eof(deadline, kMaxReplyBytes);
  } catch (const NetError& e) {
    throw NoReply(e.what());
  }
  if (reply.empty()) throw NoReply(endpoint.name() + " closed the connection without a reply");
  return reply;
}

std::unique_ptr<Session> Session::open(const Endpoint& endpoint, const Timeouts& t) {
  Connection c = Connection::open(endpoint, t.connect);
  auto deadline = Clock::now() + t.read;
  bool eof = false;
  std::string line;
  try {
    c.write_all(std::string(wire::kSessionHello) + '\n', deadline);
    line = c.read_line(deadline, 4096, eof);
  } catch (const NetError& e) {
    // Not fatal: a busy server (e.g. all threads of a thread-per-client
    // pool taken) is silent too. Only a wrong answer is SessionUnsupported.
    if (std::string_view(e.what()).rfind("timeout", 0) == 0)
      throw NotSent("timeout: no answer to the session hello from " + endpoint.name() + " within " +
                    std::to_string(t.read.count()) +
                    " ms (server busy, or it does not speak the session extension)");
    throw NotSent(e.what());
  }
  if (eof || line != wire::kSessionAccept) {
    std::string answer = line;
    if (!eof) {
      // Show the rest of what an old server sent (its <error> reply), briefly.
      answer += "\n" + c.read_some_quietly(Clock::now() + std::chrono::milliseconds(500), 2048);
    }
    c.close();
    throw SessionUnsupported("server does not support persistent sessions (it answered: " +
                             (answer.empty() ? std::string("nothing, it closed the connection")
                                             : printable_excerpt(answer, 300)) +
                             ")");
  }
  return std::unique_ptr<Session>(new Session(endpoint, std::move(c), t));
}

std::string Session::request(std::string_view xml) {
  auto deadline = Clock::now() + timeouts_.read;
  try {
    connection_.write_all(frame_request(xml), deadline);
  } catch (const NetError& e) {
    connection_.close();
    throw NotSent(e.what());
  }
  try {
    bool eof = false;
    std::string line = connection_.read_line(deadline, 32, eof);
    if (eof) {
      if (line.empty()) throw NoReply(connection_.peer() + " closed the session without a reply");
      throw NoReply(connection_.peer() +
                    " closed the session in the middle of a reply: " + printable_excerpt(line));
    }
    auto length = parse_length_line(line);
    if (!length || *length > kMaxReplyBytes)
      throw NoReply("bad reply length line from " + connection_.peer() + ": " +
                    printable_excerpt(line));
    return connection_.read_exact(*length, deadline);
  } catch (const NoReply&) {
    connection_.close();  // the stream position is unknown: never reuse it
    throw;
  } catch (const NetError& e) {
    connection_.close();
    throw NoReply(e.what());
  } catch (...) {
    connection_.close();
    throw;
  }
}

std::unique_ptr<Session> SessionPool::acquire() {
  for (;;) {
    std::unique_ptr<Session> s;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (idle_.empty()) break;
      s = std::move(idle_.back());
      idle_.pop_back();
    }
    if (!s->stale()) return s;
    // dropped: the server closed it while it was idle
  }
  auto s = Session::open(endpoint_, timeouts_);
  std::lock_guard<std::mutex> lock(mutex_);
  ++opened_;
  return s;
}

void SessionPool::release(std::unique_ptr<Session> session) {
  if (!session || !session->usable()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  idle_.push_back(std::move(session));
}

std::size_t SessionPool::opened() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return opened_;
}

std::size_t SessionPool::close_idle() {
  std::vector<std::unique_ptr<Session>> closing;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closing.swap(idle_);
  }
  return closing.size();  // closed here, outside the lock
}

}  // namespace exch::net

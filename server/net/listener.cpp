#include "net/listener.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <system_error>

#include "net/framing.hpp"
#include "util/log.hpp"

namespace net {
namespace {

// A TLS record (alert, TLS 1.2 record version, 2 bytes) holding a fatal internal_error alert
// (RFC 8446 6.2): TLS has no "busy" alert, and internal_error is the one for a failure
// "unrelated to the peer or the correctness of the protocol". OpenSSL clients report "tlsv1
// alert internal error".
const std::string kTlsInternalErrorAlert("\x15\x03\x03\x00\x02\x02\x50", 7);

}  // namespace

std::string numeric_bind(const std::string& bind_address) {
  return bind_address == "localhost" ? "127.0.0.1" : bind_address;
}

Listener::Listener(const std::string& bind_address, std::uint16_t port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  if (inet_pton(AF_INET, numeric_bind(bind_address).c_str(), &addr.sin_addr) != 1)
    throw std::runtime_error("invalid --bind address '" + bind_address + "' (need IPv4)");
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  int one = 1;
  ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    int err = errno;
    ::close(fd_);
    throw std::runtime_error("cannot listen on " + bind_address + ":" + std::to_string(port) +
                             ": " + std::strerror(err));
  }
  // A deep backlog: one-request-per-connection clients arrive in bursts.
  ::listen(fd_, 4096);
  socklen_t len = sizeof addr;
  ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
}

Listener::~Listener() {
  if (fd_ >= 0) ::close(fd_);
}

int Listener::release() {
  int fd = fd_;
  fd_ = -1;
  return fd;
}

int Listener::accept_for(std::chrono::milliseconds wait) {
  pollfd p{fd_, POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(wait.count())) <= 0) return -1;
  int fd = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
  if (fd >= 0) {
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  } else if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
    // The connection stays in the backlog and poll() would report it again at once: wait for
    // descriptors to be freed rather than spin.
    ::poll(nullptr, 0, static_cast<int>(wait.count()));
  }
  return fd;
}

Refuser::~Refuser() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  for (const Lingering& l : lingering_) ::close(l.fd);
}

void Refuser::refuse(int fd, const std::string& reply) {
  const std::string& bytes = tls_ ? kTlsInternalErrorAlert : reply;
  ssize_t sent = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  (void)sent;  // a client that is gone already needs no answer
  ::shutdown(fd, SHUT_WR);
  std::lock_guard<std::mutex> lock(mutex_);
  ++refused_;
  if (stopping_ || lingering_.size() >= max_lingering_) {
    ::close(fd);
    return;
  }
  if (!thread_.joinable()) {
    try {
      thread_ = std::thread([this] { run(); });
    } catch (const std::system_error&) {
      ::close(fd);  // out of threads: no grace period, the reply may be cut by a reset
      return;
    }
  }
  lingering_.push_back({fd, std::chrono::steady_clock::now() + grace_});
  wake_.notify_one();
}

void Refuser::refuse_busy(int fd, std::size_t max_connections) {
  refuse(fd, server_busy_reply(max_connections));
  if (std::size_t n = refused(); n % 1000 == 1)
    EXCHANGE_LOG(warn) << "refused a connection: " << max_connections
                       << " already open (--max-connections); " << n << " refused so far";
}

std::size_t Refuser::refused() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return refused_;
}

void Refuser::run() {
  std::vector<pollfd> polled;
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return stopping_ || !lingering_.empty(); });
    if (stopping_) return;
    polled.clear();
    for (const Lingering& l : lingering_) polled.push_back({l.fd, POLLIN, 0});
    lock.unlock();
    // Short slices: refusals that arrive meanwhile are picked up by the next round.
    ::poll(polled.data(), polled.size(), 50);
    std::vector<int> done;
    char buf[4096];
    for (const pollfd& p : polled) {
      if (p.revents == 0) continue;
      ssize_t n;
      while ((n = ::recv(p.fd, buf, sizeof buf, MSG_DONTWAIT)) > 0) {
      }
      if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
        done.push_back(p.fd);
    }
    lock.lock();
    auto now = std::chrono::steady_clock::now();
    auto gone = std::remove_if(lingering_.begin(), lingering_.end(), [&](const Lingering& l) {
      if (l.until > now && std::find(done.begin(), done.end(), l.fd) == done.end()) return false;
      ::close(l.fd);
      return true;
    });
    lingering_.erase(gone, lingering_.end());
  }
}

}  // namespace net

#include "support/freezing_proxy.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <stdexcept>

#include "support/loopback.hpp"

namespace testing_support {

struct FreezingProxy::Pair {
  int client = -1;    // the server's side
  int upstream = -1;  // PostgreSQL's side
};

namespace {

// Sends everything; false if the peer is gone.
bool send_all(int fd, const char* data, std::size_t size) {
  while (size > 0) {
    ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
    if (n <= 0) return false;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

FreezingProxy::FreezingProxy(std::string target_host, unsigned short target_port)
    : target_host_(std::move(target_host)), target_port_(target_port) {
  listen_fd_ = listen_loopback(port_, 64);
  if (::pipe(wake_pipe_) != 0) throw std::runtime_error("proxy: pipe");
  thread_ = std::thread([this] { run(); });
}

FreezingProxy::~FreezingProxy() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake();
  thread_.join();
  for (auto& p : pairs_) {
    ::close(p->client);
    ::close(p->upstream);
  }
  for (int fd : held_) ::close(fd);
  ::close(listen_fd_);
  ::close(wake_pipe_[0]);
  ::close(wake_pipe_[1]);
}

void FreezingProxy::wake() {
  char c = 0;
  (void)!::write(wake_pipe_[1], &c, 1);
}

int FreezingProxy::freeze() {
  std::unique_lock<std::mutex> lock(mutex_);
  int ticket = ++freeze_requests_;
  wake();
  done_.wait(lock, [&] { return freezes_done_ >= ticket; });
  return last_frozen_;
}

void FreezingProxy::set_new_connections(NewConnections mode) {
  std::lock_guard<std::mutex> lock(mutex_);
  mode_ = mode;
}

int FreezingProxy::relaying() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return relaying_;
}

void FreezingProxy::run() {
  std::vector<char> buf(64 * 1024);
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopping_) return;
      if (freezes_done_ < freeze_requests_) {
        // Frozen: never polled, read or written again, never closed while the test runs.
        last_frozen_ = static_cast<int>(pairs_.size());
        for (auto& p : pairs_) {
          held_.push_back(p->client);
          held_.push_back(p->upstream);
        }
        pairs_.clear();
        freezes_done_ = freeze_requests_;
        done_.notify_all();
      }
      relaying_ = static_cast<int>(pairs_.size());
    }
    std::vector<pollfd> fds = {{wake_pipe_[0], POLLIN, 0}, {listen_fd_, POLLIN, 0}};
    for (auto& p : pairs_) {
      fds.push_back({p->client, POLLIN, 0});
      fds.push_back({p->upstream, POLLIN, 0});
    }
    if (::poll(fds.data(), fds.size(), 1000) < 0) continue;
    if (fds[0].revents & POLLIN) {
      char drain[64];
      (void)!::read(wake_pipe_[0], drain, sizeof drain);
    }
    // Relay before accepting: `fds` indexes pairs_ as it was when polled.
    std::vector<std::size_t> closed;
    for (std::size_t i = 0; i < pairs_.size(); ++i) {
      for (int side = 0; side < 2; ++side) {
        const pollfd& pfd = fds[2 + 2 * i + side];
        if (!(pfd.revents & (POLLIN | POLLHUP | POLLERR))) continue;
        int from = pfd.fd;
        int to = side == 0 ? pairs_[i]->upstream : pairs_[i]->client;
        ssize_t n = ::recv(from, buf.data(), buf.size(), 0);
        if (n <= 0 || !send_all(to, buf.data(), static_cast<std::size_t>(n))) {
          closed.push_back(i);
          break;
        }
      }
    }
    for (auto it = closed.rbegin(); it != closed.rend(); ++it) {
      ::close(pairs_[*it]->client);
      ::close(pairs_[*it]->upstream);
      pairs_.erase(pairs_.begin() + static_cast<std::ptrdiff_t>(*it));
    }
    if (fds[1].revents & POLLIN) {
      int client = ::accept(listen_fd_, nullptr, nullptr);
      if (client < 0) continue;
      NewConnections mode;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        mode = mode_;
      }
      if (mode == NewConnections::Refuse) {
        ::close(client);
      } else if (mode == NewConnections::Swallow) {
        held_.push_back(client);
      } else {
        int upstream = try_connect(target_host_.c_str(), target_port_);
        if (upstream < 0) {
          ::close(client);
        } else {
          auto p = std::make_unique<Pair>();
          p->client = client;
          p->upstream = upstream;
          pairs_.push_back(std::move(p));
        }
      }
    }
  }
}

bool split_database_url(const std::string& url, std::string& host, unsigned short& port) {
  const std::string scheme = "postgresql://";
  if (url.rfind(scheme, 0) != 0) return false;
  auto at = url.find('@', scheme.size());
  auto host_start = at == std::string::npos ? scheme.size() : at + 1;
  auto slash = url.find('/', host_start);
  std::string hostport = url.substr(host_start, slash - host_start);
  auto colon = hostport.rfind(':');
  if (colon == std::string::npos) return false;
  host = hostport.substr(0, colon);
  port = static_cast<unsigned short>(std::stoi(hostport.substr(colon + 1)));
  return true;
}

std::string database_url_via(const std::string& url, unsigned short port) {
  const std::string scheme = "postgresql://";
  auto at = url.find('@', scheme.size());
  auto host_start = at == std::string::npos ? scheme.size() : at + 1;
  auto slash = url.find('/', host_start);
  return url.substr(0, host_start) + "127.0.0.1:" + std::to_string(port) +
         (slash == std::string::npos ? "" : url.substr(slash));
}

}  // namespace testing_support

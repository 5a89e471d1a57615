#pragma once
// The operator's HTTP port (--admin-port): GET requests answered by a routing function, on its
// own thread and io_context, so a scrape or a health check never waits behind trading traffic
// and a slow or hostile HTTP client never slows the trading port. Boost.Beast parses and writes
// HTTP/1.1; every connection answers one request and closes; requests are small (headers up to
// 8 KiB, no body). AdminLimits bounds the connections and how long each may take; at the cap
// the oldest connection still waiting for its request gives way (AdminSlots says why).
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include <boost/asio.hpp>

#include "net/admin_slots.hpp"

namespace net {

struct HttpResponse {
  unsigned status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

struct AdminLimits {
  // Connections open at once (--admin-max-connections).
  std::size_t max_connections = 64;
  // The whole request must arrive within this, counted from the accept, so an idle or
  // slowloris client cannot hold a slot; writing the response gets as long again, so neither
  // can a client that does not read it (--admin-timeout-ms).
  std::chrono::milliseconds timeout{2000};
};

// Called on the admin thread with the request's target ("/metrics"); only for GET and HEAD.
using HttpRoutes = std::function<HttpResponse(const std::string& target)>;

class AdminHttpServer {
 public:
  // Binds and starts serving; throws std::runtime_error with the reason (e.g. port in use).
  AdminHttpServer(const std::string& bind_address, std::uint16_t port, HttpRoutes routes,
                  AdminLimits limits = {});
  ~AdminHttpServer();
  AdminHttpServer(const AdminHttpServer&) = delete;
  AdminHttpServer& operator=(const AdminHttpServer&) = delete;

  std::uint16_t port() const { return port_; }
  // Stops accepting, drops open connections, joins the thread. Idempotent.
  void stop();

 private:
  void accept();

  boost::asio::io_context io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::steady_timer backoff_;
  HttpRoutes routes_;
  AdminLimits limits_;
  std::uint16_t port_ = 0;
  // Shared with the connections, which may outlive this object's members in io_'s destructor.
  std::shared_ptr<AdminSlots> slots_;
  std::thread thread_;
};

}  // namespace net

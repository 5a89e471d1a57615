#include "net/admin_http.hpp"

#include <optional>
#include <stdexcept>

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "net/listener.hpp"
#include "util/log.hpp"

namespace net {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

// One request, one response, close. It holds one of the server's slots from start() to close().
class HttpConnection : public std::enable_shared_from_this<HttpConnection> {
 public:
  HttpConnection(tcp::socket socket, const HttpRoutes& routes, std::shared_ptr<AdminSlots> slots,
                 std::chrono::milliseconds timeout)
      : stream_(std::move(socket)), routes_(routes), slots_(std::move(slots)), timeout_(timeout) {
    parser_.header_limit(8 * 1024);
    parser_.body_limit(0);  // GET and HEAD carry no body
  }
  // Dropped with the io_context after stop(), never closed: the slot goes all the same.
  ~HttpConnection() {
    if (slot_) slots_->release(*slot_);
  }

  void start() {
    slot_ = slots_->take([weak = weak_from_this()] {
      if (auto self = weak.lock()) self->close();
    });
    // One deadline for the whole request, not one per read: a client dripping a byte at a
    // time (slowloris) must not be able to stretch it.
    stream_.expires_after(timeout_);
    http::async_read(stream_, buffer_, parser_,
                     [self = shared_from_this()](beast::error_code ec, std::size_t) {
                       // Bad HTTP, timeout, reset: no answer. No slot: evicted for a newcomer
                       // after the request arrived but before this ran.
                       if (ec || !self->slot_) return self->close();
                       self->respond();
                     });
  }

 private:
  void respond() {
    const auto& req = parser_.get();
    HttpResponse answer;
    if (req.method() != http::verb::get && req.method() != http::verb::head) {
      answer = {405, "text/plain; charset=utf-8", "only GET and HEAD\n"};
    } else {
      try {
        answer = routes_(std::string(req.target()));
      } catch (const std::exception& e) {
        answer = {500, "text/plain; charset=utf-8", std::string("internal error: ") + e.what()};
      }
    }
    response_.version(req.version());
    response_.result(answer.status);
    response_.set(http::field::server, "exchange-server");
    response_.set(http::field::content_type, answer.content_type);
    response_.keep_alive(false);
    if (req.method() == http::verb::head) {
      response_.content_length(answer.body.size());
    } else {
      response_.body() = std::move(answer.body);
      response_.prepare_payload();
    }
    slots_->answering(*slot_);
    // A fresh deadline for the response, so a client that does not read it cannot hold the
    // slot (which is no longer evictable) for longer than that.
    stream_.expires_after(timeout_);
    http::async_write(
        stream_, response_,
        [self = shared_from_this()](beast::error_code, std::size_t) { self->close(); });
  }

  // Idempotent: an evicted connection is closed again when its read is aborted.
  void close() {
    if (slot_) slots_->release(*slot_);
    slot_.reset();
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.socket().close(ignored);
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  http::request_parser<http::empty_body> parser_;
  http::response<http::string_body> response_;
  const HttpRoutes& routes_;
  std::shared_ptr<AdminSlots> slots_;
  std::optional<AdminSlots::Slot> slot_;  // empty before start() and after close()
  std::chrono::milliseconds timeout_;
};

}  // namespace

AdminHttpServer::AdminHttpServer(const std::string& bind_address, std::uint16_t port,
                                 HttpRoutes routes, AdminLimits limits)
    : acceptor_(io_),
      backoff_(io_),
      routes_(std::move(routes)),
      limits_(limits),
      slots_(std::make_shared<AdminSlots>(limits.max_connections)) {
  if (limits.max_connections < 1 || limits.timeout.count() < 1)
    throw std::runtime_error("the admin port needs at least 1 connection and 1 ms");
  beast::error_code ec;
  auto address = asio::ip::make_address(numeric_bind(bind_address), ec);
  if (ec) throw std::runtime_error("invalid --admin-bind address '" + bind_address + "'");
  tcp::endpoint endpoint(address, port);
  acceptor_.open(endpoint.protocol(), ec);
  if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(endpoint, ec);
  if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec)
    throw std::runtime_error("cannot serve the admin port on " + bind_address + ":" +
                             std::to_string(port) + ": " + ec.message());
  port_ = acceptor_.local_endpoint().port();
  accept();
  thread_ = std::thread([this] {
    // As on the trading port: nothing a client does may end this thread.
    for (;;) {
      try {
        io_.run();
        return;
      } catch (const std::exception& e) {
        EXCHANGE_LOG(error) << "admin port: a handler failed (" << e.what() << "); serving on";
      }
    }
  });
}

AdminHttpServer::~AdminHttpServer() { stop(); }

void AdminHttpServer::accept() {
  acceptor_.async_accept([this](beast::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
    if (ec) {
      // Out of descriptors, say: the connection stays queued, so accepting again at once
      // would spin this thread. Try again shortly.
      backoff_.expires_after(std::chrono::milliseconds(100));
      backoff_.async_wait([this](beast::error_code wait_ec) {
        if (!wait_ec) accept();
      });
      return;
    }
    if (slots_->make_room()) {
      std::make_shared<HttpConnection>(std::move(socket), routes_, slots_, limits_.timeout)
          ->start();
    } else {
      beast::error_code ignored;
      socket.close(ignored);  // every slot is answering a request; trading is not touched
    }
    accept();
  });
}

void AdminHttpServer::stop() {
  if (!thread_.joinable()) return;
  asio::post(io_, [this] {
    beast::error_code ignored;
    acceptor_.close(ignored);
    backoff_.cancel();
  });
  io_.stop();  // open connections are dropped; their objects go with the io_context
  thread_.join();
}

}  // namespace net

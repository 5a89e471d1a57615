#include "net/admin_http.hpp"

#include <stdexcept>

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "util/log.hpp"

namespace net {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

constexpr int kMaxOpen = 64;
constexpr auto kDeadline = std::chrono::seconds(5);

// One request, one response, close.
class HttpConnection : public std::enable_shared_from_this<HttpConnection> {
 public:
  HttpConnection(tcp::socket socket, const HttpRoutes& routes, std::shared_ptr<int> open)
      : stream_(std::move(socket)), routes_(routes), open_(std::move(open)) {
    ++*open_;
    parser_.header_limit(8 * 1024);
    parser_.body_limit(0);  // GET and HEAD carry no body
  }
  ~HttpConnection() { --*open_; }

  void start() {
    stream_.expires_after(kDeadline);
    http::async_read(stream_, buffer_, parser_,
                     [self = shared_from_this()](beast::error_code ec, std::size_t) {
                       if (ec) return self->close();  // bad HTTP, timeout, reset: no answer
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
    http::async_write(
        stream_, response_,
        [self = shared_from_this()](beast::error_code, std::size_t) { self->close(); });
  }

  void close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.socket().close(ignored);
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  http::request_parser<http::empty_body> parser_;
  http::response<http::string_body> response_;
  const HttpRoutes& routes_;
  std::shared_ptr<int> open_;
};

}  // namespace

AdminHttpServer::AdminHttpServer(const std::string& bind_address, std::uint16_t port,
                                 HttpRoutes routes)
    : acceptor_(io_), backoff_(io_), routes_(std::move(routes)), open_(std::make_shared<int>(0)) {
  beast::error_code ec;
  auto address = asio::ip::make_address(bind_address, ec);
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
    {
      if (*open_ >= kMaxOpen) {
        beast::error_code ignored;
        socket.close(ignored);  // a flood of scrapers gets closed, trading is not touched
      } else {
        std::make_shared<HttpConnection>(std::move(socket), routes_, open_)->start();
      }
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

#pragma once
// One connection driven by a Boost.Asio event loop: reads and frames requests without
// blocking, passes each to `dispatch`, and writes the reply whenever it comes back (from any
// thread). One request at a time per connection, so replies keep the requests' order.
#include <functional>
#include <memory>
#include <string>

#include <boost/asio.hpp>

#include "net/framing.hpp"

namespace net {

class AsyncConnection : public std::enable_shared_from_this<AsyncConnection> {
 public:
  using ReplyFn = std::function<void(std::string xml)>;
  // Must eventually call the ReplyFn exactly once, from any thread.
  using DispatchFn = std::function<void(std::string payload, ReplyFn reply)>;

  AsyncConnection(boost::asio::ip::tcp::socket socket, const ConnectionLimits& limits,
                  DispatchFn dispatch, std::function<void()> on_close);
  ~AsyncConnection();

  void start();
  // Closes the connection if it is idle; otherwise once the request in flight is answered.
  void shutdown();

 private:
  void read_more();
  void process_buffer();
  void send(std::string bytes, bool then_close);
  // Starts the deadline for the next request (or for the write in flight).
  void arm_timer();
  void close();

  boost::asio::ip::tcp::socket socket_;
  boost::asio::steady_timer timer_;
  ConnectionLimits limits_;
  DispatchFn dispatch_;
  std::function<void()> on_close_;
  FrameReader reader_;
  char buf_[16384];
  std::string out_;
  bool persistent_ = false;
  bool busy_ = false;         // a request is with the handler
  bool writing_ = false;      // an async_write is in flight
  bool final_write_ = false;  // the connection closes once the write in flight is done
  bool shutting_down_ = false;
  bool closed_ = false;
};

}  // namespace net

// Thread per request: the event loop reads and frames requests (also several on a persistent
// connection, one at a time each); every request gets a new thread that runs the handler and
// exits. The thread's creation cost is paid on every request, and under load the number of
// threads is the number of requests being handled, with no bound.
#include "app/log.hpp"
#include "concurrency/event_loop.hpp"
#include "concurrency/model.hpp"
#include "concurrency/run_request.hpp"
#include "concurrency/thread_set.hpp"

namespace concurrency {
namespace {

class PerRequest : public Model {
 public:
  explicit PerRequest(const ModelOptions& options) : options_(options) {}

  void run(net::Listener& listener, app::RequestHandler& handler) override {
    app::Metrics& metrics = *options_.metrics;
    EventLoop loop(
        listener, options_.limits,
        [this, &handler, &metrics](std::string payload, net::AsyncConnection::ReplyFn reply) {
          metrics.arrival();
          spawn(handler, std::move(payload), std::move(reply));
        });
    LoopStopper::Attachment attached(stopper_, loop);
    metrics.set_gauges([this, &loop] {
      app::Metrics::Gauges g;
      g.threads = g.busy = static_cast<long>(threads_.live());
      g.connections = static_cast<long>(loop.open_connections());
      return g;
    });
    loop.run();  // returns when stopped, every connection closed and every reply written
    metrics.set_gauges(nullptr);
    // The last threads may still be leaving after their reply went out.
    threads_.join_all();
  }

  void stop() override { stopper_.stop(); }

 private:
  // On the event-loop thread.
  void spawn(app::RequestHandler& handler, std::string payload,
             net::AsyncConnection::ReplyFn reply) {
    try {
      threads_.spawn([this, &handler, payload = std::move(payload), reply]() mutable {
        try {
          run_request(handler, options_, payload, std::move(reply));
        } catch (const std::exception& e) {
          EXCHANGE_LOG(error) << "a request failed in its thread: " << e.what();
        }
      });
    } catch (const boost::thread_resource_error& e) {
      EXCHANGE_LOG(warn) << "cannot start a thread for a request: " << e.what();
      reply(net::framing_error_reply("Server busy: no thread for the request; retry later"));
    }
  }

  ModelOptions options_;
  ThreadSet threads_;
  LoopStopper stopper_;
};

}  // namespace

std::unique_ptr<Model> make_per_request(const ModelOptions& options) {
  return std::make_unique<PerRequest>(options);
}

}  // namespace concurrency

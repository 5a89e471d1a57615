#include "concurrency/run_request.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <thread>

#include <boost/thread/future.hpp>

#include "net/framing.hpp"
#include "protocol/request_shape.hpp"
#include "serving/reply_errors.hpp"
#include "util/log.hpp"

namespace concurrency {

std::chrono::nanoseconds RequestRunner::run(std::string_view payload, const auth::Caller& caller,
                                            serving::Handler::Reply done, int children) const {
  auto start = std::chrono::steady_clock::now();
  if (options_.simulated_io_ms_per_child > 0) {
    if (children < 0) children = static_cast<int>(protocol::scan_request(payload).children);
    std::this_thread::sleep_for(std::chrono::milliseconds(options_.simulated_io_ms_per_child) *
                                children);
  }
  // The connection waits for exactly one reply: if the handler throws (out of memory, a bug)
  // before answering, the request gets an error instead of a connection stuck for ever; a
  // second answer (from a commit callback registered before the throw) is dropped.
  auto answered = std::make_shared<std::atomic<bool>>(false);
  auto once = [answered, done = std::move(done)](std::string xml) {
    if (!answered->exchange(true)) done(std::move(xml));
  };
  try {
    handler_.handle(payload, caller, once);
  } catch (const std::exception& e) {
    EXCHANGE_LOG(error) << "a request failed: " << e.what();
    once(net::framing_error_reply(serving::error_text(serving::ReplyError::HandlerFailed)));
  }
  auto took = std::chrono::steady_clock::now() - start;
  metrics_.completion(took);
  return took;
}

std::string RequestRunner::run_blocking(std::string_view payload,
                                        const auth::Caller& caller) const {
  boost::promise<std::string> reply;
  boost::unique_future<std::string> future = reply.get_future();
  run(payload, caller, [&reply](std::string xml) { reply.set_value(std::move(xml)); });
  return future.get();
}

namespace {

// One descriptor per thread, opened on first use and closed when the thread ends.
struct SchedStat {
  int fd = ::open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
  ~SchedStat() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::int64_t thread_runqueue_wait_ns() {
  thread_local SchedStat stat;
  if (stat.fd < 0) return -1;
  char buf[96];
  ssize_t n = ::pread(stat.fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return -1;
  buf[n] = '\0';
  // "<ns on cpu> <ns waiting on a runqueue> <timeslices>"
  char* end = nullptr;
  std::strtoll(buf, &end, 10);
  if (end == buf) return -1;
  char* after = nullptr;
  long long wait = std::strtoll(end, &after, 10);
  return after == end ? -1 : wait;
}

}  // namespace concurrency

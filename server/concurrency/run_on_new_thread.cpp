// per-request: every request gets a new thread that runs it and exits. The thread's creation
// cost is paid on every request, and under load the number of threads is the number of
// requests being handled, with no bound (seeds 000 and 004 measure exactly that).
#include "concurrency/run_policy.hpp"
#include "concurrency/thread_set.hpp"
#include "net/framing.hpp"
#include "serving/reply_errors.hpp"
#include "util/log.hpp"

namespace concurrency {
namespace {

class RunOnNewThread : public RunPolicy {
 public:
  explicit RunOnNewThread(const RequestRunner& runner) : runner_(runner) {}

  void run(Job job) override {
    auto reply = job.reply;  // kept to answer if no thread can be started
    try {
      threads_.spawn([this, job = std::move(job)]() mutable {
        runner_.run(job.payload, job.caller, std::move(job.reply));
      });
    } catch (const boost::thread_resource_error& e) {
      EXCHANGE_LOG(warn) << "cannot start a thread for a request: " << e.what();
      reply(net::framing_error_reply(serving::error_text(serving::ReplyError::NoThreadForRequest)));
    }
  }

  void gauges(serving::Gauges& g) const override {
    g.threads = g.busy = static_cast<long>(threads_.live());
  }

  // The last threads may still be leaving after their reply went out.
  void finish() override { threads_.join_all(); }

 private:
  const RequestRunner runner_;
  ThreadSet threads_;
};

}  // namespace

std::unique_ptr<RunPolicy> run_on_new_thread(const RequestRunner& runner) {
  return std::make_unique<RunOnNewThread>(runner);
}

}  // namespace concurrency

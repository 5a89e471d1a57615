// reactor: every request runs on the event-loop thread itself, the single-threaded baseline.
// Nothing else runs while a request is handled (simulated I/O included), but the group-commit
// wait is not on this thread: the reply is written when its batch commits, and meanwhile the
// loop serves others.
#include <atomic>

#include "concurrency/run_policy.hpp"

namespace concurrency {
namespace {

class RunInline : public RunPolicy {
 public:
  explicit RunInline(const RequestRunner& runner) : runner_(runner) {}

  void run(Job job) override {
    in_handler_.store(1, std::memory_order_relaxed);
    runner_.run(job.payload, job.caller, std::move(job.reply));
    in_handler_.store(0, std::memory_order_relaxed);
  }

  void gauges(serving::Gauges& g) const override {
    g.threads = 1;
    g.busy = in_handler_.load(std::memory_order_relaxed);
  }

  void finish() override {}

 private:
  const RequestRunner runner_;
  std::atomic<int> in_handler_{0};
};

}  // namespace

std::unique_ptr<RunPolicy> run_inline(const RequestRunner& runner) {
  return std::make_unique<RunInline>(runner);
}

}  // namespace concurrency

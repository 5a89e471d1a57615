// fotp: the workload-profiling frequency-oriented thread pool of Bahadur et al., "A Perfect
// Knob to Scale Thread Pool on Runtime" (seed 001), as the Sizer of a self-sizing pool.
//
//   Receiver + Counter:  the event loop counts every arriving request.
//   Tag_Binder:          it computes the request's class (scan_request: the root element and
//                        the counts of its children by kind, e.g. "transactions:order2,query1")
//                        and looks the class up in a hash table of service times; if found, the
//                        time is added to total_ST.
//   Workload profiler:   the first request of a class to finish records its service time (time
//                        in the worker: simulated I/O plus the handler call, stamped at start
//                        and end) in the table. Later requests of that class are not measured.
//   Frequency detector:  every second, λ = Counter (per second), avg_ST = total_ST / Counter
//                        (the paper's Eq. 2; unknown classes count as 0), and both reset.
//   Tuning rule (DTS):   pool = λ if avg_ST <= 1 s, else pool = λ · avg_ST, clamped to
//                        [--min-threads, --max-threads]. The pool is set to that size at once
//                        (threads are started up to it), as in the paper.
//   Idle retirement:     a thread idle for 500 ms retires (down to --min-threads); threads
//                        above a lower new size retire as soon as they are idle.
//
// The pool starts at --min-threads (the paper starts both pools at 10). The class table is
// bounded (kMaxClasses); classes beyond it are not profiled.
#include <cmath>
#include <mutex>
#include <string>
#include <unordered_map>

#include "concurrency/sizer.hpp"

namespace concurrency {
namespace {

class FotpSizer : public Sizer {
 public:
  const char* name() const override { return "fotp"; }
  std::chrono::milliseconds period() const override { return std::chrono::seconds(1); }
  std::chrono::milliseconds idle_timeout() const override { return std::chrono::milliseconds(500); }
  unsigned initial_threads(const DynamicPool::Limits& limits) const override {
    return limits.min_threads;
  }
  bool wants_request_class() const override { return true; }

  void arrived(const protocol::RequestShape& shape) override {
    std::lock_guard<std::mutex> lock(mutex_);
    ++counter_;
    auto it = service_s_.find(shape.key);
    if (it != service_s_.end()) total_st_ += it->second;
  }

  void finished(const protocol::RequestShape& shape, const TaskTimes& times) override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (service_s_.size() >= kMaxClasses) return;
    // First sight only: try_emplace keeps the first measurement of a class.
    service_s_.try_emplace(shape.key, std::chrono::duration<double>(times.wall).count());
  }

  unsigned decide(const DynamicPool::Stats&, std::chrono::nanoseconds elapsed) override {
    std::uint64_t counter;
    double total_st;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      counter = counter_;
      total_st = total_st_;
      counter_ = 0;
      total_st_ = 0;
    }
    double seconds = std::chrono::duration<double>(elapsed).count();
    double lambda = seconds > 0 ? static_cast<double>(counter) / seconds : 0;
    double avg_st = counter ? total_st / static_cast<double>(counter) : 0;
    double size = avg_st <= 1.0 ? lambda : lambda * avg_st;
    return static_cast<unsigned>(std::min(std::ceil(size), 1e6));
  }

 private:
  static constexpr std::size_t kMaxClasses = 4096;
  std::mutex mutex_;
  std::uint64_t counter_ = 0;
  double total_st_ = 0;  // seconds
  std::unordered_map<std::string, double> service_s_;
};

}  // namespace

std::unique_ptr<Sizer> make_fotp_sizer() { return std::make_unique<FotpSizer>(); }

std::unique_ptr<RunPolicy> run_on_fotp_pool(const RequestRunner& runner) {
  return run_on_sized_pool(runner, make_fotp_sizer());
}

}  // namespace concurrency

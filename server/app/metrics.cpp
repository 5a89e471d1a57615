#include "app/metrics.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <stdexcept>

namespace app {

Metrics::~Metrics() { stop(); }

void Metrics::completion(std::chrono::nanoseconds service) {
  if (!enabled_.load(std::memory_order_relaxed)) return;
  std::lock_guard<std::mutex> lock(samples_mutex_);
  samples_ns_.push_back(service.count());
}

void Metrics::set_gauges(GaugeFn gauges) {
  std::lock_guard<std::mutex> lock(gauges_mutex_);
  gauges_ = std::move(gauges);
}

void Metrics::set_db_counters(DbCounterFn counters) {
  std::lock_guard<std::mutex> lock(gauges_mutex_);
  db_counters_ = std::move(counters);
}

void Metrics::start_csv(const std::string& path) {
  out_.open(path, std::ios::out | std::ios::trunc);
  if (!out_) throw std::runtime_error("cannot write --metrics " + path);
  out_ << "time,arrivals,completions,mean_service_ms,p99_service_ms,threads,busy_threads,"
          "queue_length,open_connections,rss_kb,target_threads,db_timeouts,db_reconnects\n"
       << std::flush;
  // Counts start with the first row's second.
  arrivals_.store(0);
  {
    std::lock_guard<std::mutex> lock(samples_mutex_);
    samples_ns_.clear();
  }
  enabled_.store(true);
  writer_ = std::thread([this] { write_loop(); });
}

void Metrics::stop() {
  {
    std::lock_guard<std::mutex> lock(writer_mutex_);
    stopping_ = true;
  }
  writer_wake_.notify_all();
  if (writer_.joinable()) writer_.join();
}

void Metrics::write_loop() {
  auto next = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lock(writer_mutex_);
  for (;;) {
    next += std::chrono::seconds(1);
    bool stopping = writer_wake_.wait_until(lock, next, [this] { return stopping_; });
    if (stopping) return;  // a last, partial second is not a row
    lock.unlock();
    write_row();
    lock.lock();
  }
}

namespace {

void field(std::ostream& out, long value) {
  out << ',';
  if (value >= 0) out << value;
}

void field_ms(std::ostream& out, std::int64_t ns, bool present) {
  out << ',';
  if (!present) return;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", static_cast<double>(ns) / 1e6);
  out << buf;
}

}  // namespace

void Metrics::write_row() {
  std::vector<std::int64_t> samples;
  {
    std::lock_guard<std::mutex> lock(samples_mutex_);
    samples.swap(samples_ns_);
  }
  std::uint64_t arrivals = arrivals_.exchange(0, std::memory_order_relaxed);
  Gauges g;
  DbCounters db;
  {
    std::lock_guard<std::mutex> lock(gauges_mutex_);
    if (gauges_) g = gauges_();
    if (db_counters_) db = db_counters_();
  }
  std::int64_t mean = 0, p99 = 0;
  if (!samples.empty()) {
    mean = std::accumulate(samples.begin(), samples.end(), std::int64_t{0}) /
           static_cast<std::int64_t>(samples.size());
    // Nearest rank: the smallest sample with at least 99% of the samples at or below it.
    std::size_t rank = (samples.size() * 99 + 99) / 100;
    auto it = samples.begin() + static_cast<std::ptrdiff_t>(rank - 1);
    std::nth_element(samples.begin(), it, samples.end());
    p99 = *it;
  }
  auto now = std::chrono::system_clock::now().time_since_epoch();
  out_ << std::chrono::duration_cast<std::chrono::seconds>(now).count() << ',' << arrivals << ','
       << samples.size();
  field_ms(out_, mean, !samples.empty());
  field_ms(out_, p99, !samples.empty());
  field(out_, g.threads);
  field(out_, g.busy);
  field(out_, g.queued);
  field(out_, g.connections);
  field(out_, resident_kb());
  field(out_, g.target);
  field(out_, db.timeouts);
  field(out_, db.reconnects);
  out_ << '\n' << std::flush;
}

long resident_kb() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return -1;
  long size = 0, resident = -1;
  if (std::fscanf(f, "%ld %ld", &size, &resident) != 2) resident = -1;
  std::fclose(f);
  if (resident < 0) return -1;
  return resident * (::sysconf(_SC_PAGESIZE) / 1024);
}

}  // namespace app

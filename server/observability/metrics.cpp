#include "observability/metrics.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <stdexcept>

namespace app {

// Latency buckets from 100 µs to ~13 s (x2 each): a commit takes ~1 ms here, a stalled
// database up to --db-timeout-ms. Batch sizes from 1 to 4096 requests.
Metrics::Metrics()
    : request_seconds_(prometheus::exponential_buckets(100e-6, 2, 18)),
      commit_wait_seconds_(prometheus::exponential_buckets(100e-6, 2, 18)),
      commit_seconds_(prometheus::exponential_buckets(100e-6, 2, 18)),
      batch_requests_(prometheus::exponential_buckets(1, 2, 13)) {}

Metrics::~Metrics() { stop(); }

namespace {
double seconds(std::chrono::nanoseconds d) { return std::chrono::duration<double>(d).count(); }

// Which label of exchange_requests_total{outcome} (kLabelNames) each outcome counts under.
int label_index(Outcome outcome) {
  switch (outcome) {
    case Outcome::Durable:
      return 0;
    case Outcome::Rejected:
      return 1;
    case Outcome::Busy:
    case Outcome::Unavailable:
    case Outcome::Fenced:
      return 2;
    case Outcome::InternalError:
    case Outcome::NotApplied:
    case Outcome::Unknown:
      break;
  }
  return 3;
}
}  // namespace

const char* Metrics::label_of(Outcome outcome) { return kLabelNames[label_index(outcome)]; }

void Metrics::request_answered(Root root, Outcome outcome, std::chrono::nanoseconds latency) {
  answered_[static_cast<int>(root)][label_index(outcome)].fetch_add(1, std::memory_order_relaxed);
  request_seconds_.observe(seconds(latency));
}

void Metrics::commit_waited(std::chrono::nanoseconds wait) {
  commit_wait_seconds_.observe(seconds(wait));
}

void Metrics::committed(std::size_t requests, std::chrono::nanoseconds duration) {
  commit_seconds_.observe(seconds(duration));
  batch_requests_.observe(static_cast<double>(requests));
}

void Metrics::commit_failed() { commits_failed_.fetch_add(1, std::memory_order_relaxed); }

void Metrics::set_state(std::function<StateGauges()> state) {
  std::lock_guard<std::mutex> lock(gauges_mutex_);
  state_ = std::move(state);
}

Metrics::Sample Metrics::sample() {
  Sample out;
  std::lock_guard<std::mutex> lock(gauges_mutex_);
  if (gauges_) out.gauges = gauges_();
  if (db_counters_) out.db = db_counters_();
  if (state_) out.state = state_();
  return out;
}

std::string Metrics::prometheus_text() {
  return prometheus::render(kRows, Scrape{sample(), this, resident_kb()});
}

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
          "queue_length,open_connections,rss_kb,target_threads,db_timeouts,db_reconnects,"
          "projection_lag\n"
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
  const auto [g, db, st] = sample();
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
  field(out_,
        st.journal_seq >= 0 && st.projected_seq >= 0 ? st.journal_seq - st.projected_seq : -1);
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

#include "app/metrics.hpp"

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

// The labels of exchange_requests_total{outcome}, and which one each outcome counts under.
const char* const kLabelNames[] = {"ok", "rejected", "unavailable", "failed"};
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
  namespace p = prometheus;
  const auto [g, db, st] = sample();
  std::string out;
  out.reserve(16384);
  static const char* kRootNames[kRoots] = {"create", "transactions", "invalid"};
  p::header(out, "exchange_requests_total", "counter",
            "Requests answered, by root element and outcome (ok: answered normally, item "
            "errors included; rejected: refused as a whole (malformed, over a limit or the "
            "memory budget); unavailable: the engine was reloading, the server stepped down "
            "or is the standby, or a large request was refused as busy; failed: the commit failed "
            "or its outcome "
            "is unknown).");
  for (int r = 0; r < kRoots; ++r)
    for (int o = 0; o < kLabels; ++o)
      p::sample(out, "exchange_requests_total",
                std::string("root=\"") + kRootNames[r] + "\",outcome=\"" + kLabelNames[o] + "\"",
                static_cast<double>(answered_[r][o].load(std::memory_order_relaxed)));
  auto histogram = [&out](const char* name, const char* help, const prometheus::Histogram& h) {
    p::header(out, name, "histogram", help);
    h.render(out, name);
  };
  histogram("exchange_request_duration_seconds",
            "From the handler taking a request to its reply, the group-commit wait included.",
            request_seconds_);
  histogram("exchange_commit_wait_seconds",
            "How long an applied request waited for its group commit.", commit_wait_seconds_);
  histogram("exchange_commit_duration_seconds",
            "Duration of each successful group commit (one statement, one transaction).",
            commit_seconds_);
  histogram("exchange_commit_batch_requests", "Requests per successful group commit.",
            batch_requests_);
  p::header(out, "exchange_commits_failed_total", "counter",
            "Group commits that failed (their requests got an error; the engine was reloaded).");
  p::sample(out, "exchange_commits_failed_total", "",
            static_cast<double>(commits_failed_.load(std::memory_order_relaxed)));

  auto gauge = [&out](const char* name, const char* help, long value) {
    if (value < 0) return;  // does not apply to this model
    p::header(out, name, "gauge", help);
    p::sample(out, name, "", static_cast<double>(value));
  };
  auto counter = [&out](const char* name, const char* help, long value) {
    if (value < 0) return;
    p::header(out, name, "counter", help);
    p::sample(out, name, "", static_cast<double>(value));
  };
  // A duration kept in milliseconds, exposed in seconds as Prometheus wants.
  auto seconds_gauge = [&out](const char* name, const char* help, long ms) {
    if (ms < 0) return;
    p::header(out, name, "gauge", help);
    p::sample(out, name, "", ms / 1000.0);
  };
  gauge("exchange_connections_open", "Client connections open now.", g.connections);
  counter("exchange_connections_refused_total",
          "Connections turned away with 'Server busy' (--max-connections).", g.refused);
  gauge("exchange_buffered_bytes",
        "Bytes client connections buffer now: requests being received or with the handler, "
        "replies not yet written (bounded by --max-buffered-bytes).",
        g.buffered_bytes);
  gauge("exchange_buffered_bytes_limit", "--max-buffered-bytes.", g.buffered_limit);
  counter("exchange_buffer_refusals_total",
          "Connections told 'Server busy' and closed because client buffers were at "
          "--max-buffered-bytes.",
          g.buffer_refused);
  gauge("exchange_threads", "Threads of the concurrency model that run requests.", g.threads);
  gauge("exchange_busy_threads", "Of those, threads running a request now.", g.busy);
  gauge("exchange_queue_length", "Requests framed and waiting for a worker.", g.queued);
  gauge("exchange_pool_target_threads", "The self-sizing pool's target size.", g.target);
  if (st.role >= 0) {
    p::header(out, "exchange_role", "gauge",
              "1 for the role this server has now: active (holds the writer lock and serves) "
              "or standby (--standby: follows the journal, serves nothing until it takes "
              "over).");
    p::sample(out, "exchange_role", "role=\"active\"", st.role == 1 ? 1 : 0);
    p::sample(out, "exchange_role", "role=\"standby\"", st.role == 0 ? 1 : 0);
  }
  gauge("exchange_standby_lag_entries",
        "Standby: journal entries the active server committed that this standby has not "
        "applied yet (as of its last look, every few milliseconds).",
        st.standby_lag_entries);
  if (st.standby_lag_ms >= 0) {
    p::header(out, "exchange_standby_lag_seconds", "gauge",
              "Standby: how long since it last had applied every journal entry committed by "
              "then (how stale its state may be).");
    p::sample(out, "exchange_standby_lag_seconds", "", st.standby_lag_ms / 1000.0);
  }
  gauge("exchange_orders_resting", "Open orders in memory (resting on the books).",
        st.orders_resting);
  gauge("exchange_available",
        "1 while serving, 0 while the engine is reloaded from the database after a failed "
        "write.",
        st.available);
  gauge("exchange_journal_seq", "The last journal entry committed (one per mutating request).",
        st.journal_seq);
  if (st.journal_seq >= 0 && st.projected_seq >= 0)
    gauge("exchange_projection_lag_entries",
          "Journal entries not yet in the SQL tables (accounts, positions, orders, executions).",
          std::max(0L, st.journal_seq - st.projected_seq));
  gauge("exchange_projection_lag_rows",
        "Rows (account, position, order, execution changes) waiting to be projected.",
        st.projection_lag_rows);
  seconds_gauge("exchange_projection_lag_seconds",
                "How long the oldest journal entry not yet in the SQL tables has waited.",
                st.projection_lag_ms);
  counter("exchange_projection_failures_total",
          "Projection writes that failed (each is retried until it succeeds).",
          st.projection_failures);
  seconds_gauge("exchange_commit_stalled_seconds",
                "How long the group commit has been at its current batch (0 when idle).",
                st.commit_stalled_ms);
  gauge("exchange_heavy_requests_waiting",
        "Large requests (--heavy-request-bytes) waiting for their turn on the heavy thread.",
        st.heavy_queued);
  gauge("exchange_heavy_bytes_in_flight",
        "Bytes of large requests started and not yet answered (--max-heavy-bytes-in-flight).",
        st.heavy_in_flight_bytes);
  gauge("exchange_heavy_paused",
        "1 while large requests wait for the projection to catch up (500,000 rows behind).",
        st.heavy_paused);
  counter("exchange_heavy_requests_refused_total",
          "Large requests refused at once: too many were waiting (--max-heavy-bytes-queued).",
          st.heavy_refused);
  gauge("exchange_memory_resident_bytes", "The server's resident memory.",
        st.memory_resident_bytes);
  counter("exchange_memory_refused_total",
          "Requests refused because the server was over --max-memory-bytes.", st.memory_refused);
  counter("exchange_db_timeouts_total", "PostgreSQL calls cut off by --db-timeout-ms.",
          db.timeouts);
  counter("exchange_db_reconnects_total", "New write connections after a broken one.",
          db.reconnects);
  counter("exchange_archive_queries_total",
          "PostgreSQL statements reading queried orders no longer in memory "
          "(--closed-orders-cached): one per request, however many such orders it queries.",
          db.archive_statements);
  counter("exchange_archive_orders_total", "Orders read by those statements.", db.archive_orders);
  counter("exchange_archive_refused_total",
          "Requests whose archived orders were not read: too many lookups were waiting "
          "(--archive-connections).",
          db.archive_refused);
  gauge("exchange_archive_waiting", "Requests waiting for an archive connection.",
        db.archive_waiting);
  gauge("exchange_archive_connections",
        "PostgreSQL connections of the order archive open now (at most --archive-connections).",
        db.archive_connections);
  append_auth(out);
  long rss = resident_kb();
  if (rss >= 0) {
    p::header(out, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
    p::sample(out, "process_resident_memory_bytes", "", static_cast<double>(rss) * 1024);
  }
  return out;
}

void Metrics::append_auth(std::string& out) const {
  namespace p = prometheus;
  if (!auth_) return;
  p::header(out, "exchange_auth_refusals_total", "counter",
            "Connections and requests refused by authentication (--principals), by reason: "
            "bad_key, locked_out, key_needs_tls, not_authenticated, unknown_certificate (logons "
            "and connections); unknown_principal, account_not_permitted, trade_not_permitted, "
            "create_not_permitted (requests, refused whole before anything is journaled).");
  const auto refusals = auth_->refusals();
  for (std::size_t i = 0; i < auth::kRefusalCount; ++i) {
    const std::string label =
        std::string("reason=\"") + auth::refusal_label(static_cast<auth::Refusal>(i)) + "\"";
    p::sample(out, "exchange_auth_refusals_total", label, static_cast<double>(refusals[i]));
  }
  p::header(out, "exchange_auth_principals", "gauge",
            "Principals in force (the last good --principals file).");
  p::sample(out, "exchange_auth_principals", "", static_cast<double>(auth_->principals()->size()));
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

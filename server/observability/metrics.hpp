#pragma once
// Per-second metrics of the serving process (--metrics FILE): every concurrency model counts
// arrivals and completions (with the time each request spent in the handler) and publishes the
// gauges that apply to it; a writer thread appends one CSV row per second:
//
//   time,arrivals,completions,mean_service_ms,p99_service_ms,threads,busy_threads,
//   queue_length,open_connections,rss_kb,target_threads,db_timeouts,db_reconnects,
//   projection_lag
//
// time is Unix seconds; arrivals and completions are counts over the last second (so the
// arrival column is λ); service times are the time in the worker/handler (simulated I/O
// included, the wait for the group commit excluded), empty when nothing completed; gauges are
// sampled when the row is written and empty where the model has no such thing (the reactor
// has no queue, only the dynamic pools have a target size). db_timeouts (PostgreSQL calls cut
// off by --db-timeout-ms) and db_reconnects (new write connections after a broken one) count
// since the start. projection_lag: journal entries committed but not yet in the SQL tables
// (app::DurableEngine pauses commits at --max-projection-rows).
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "auth/gate.hpp"
#include "observability/outcome.hpp"
#include "observability/prometheus.hpp"
#include "serving/metrics_sink.hpp"

namespace app {

// The serving binaries' metrics sink (serving/metrics_sink.hpp): what the concurrency model
// reports, plus what the exchange and its database report, for the CSV and for Prometheus.
class Metrics final : public serving::MetricsSink {
 public:
  // The model's gauges (threads, queue, connections, buffer budget).
  using Gauges = serving::Gauges;
  struct DbCounters {
    long timeouts = -1;
    long reconnects = -1;
    // The order archive (queries of orders no longer in memory; Prometheus only): statements
    // sent, orders read, lookups refused as too many were waiting, and, as gauges, lookups
    // waiting and connections open now.
    long archive_statements = -1;
    long archive_orders = -1;
    long archive_refused = -1;
    long archive_waiting = -1;
    long archive_connections = -1;
  };
  using DbCounterFn = std::function<DbCounters()>;

  Metrics();
  ~Metrics();
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // A request was framed and handed to the model. Thread-safe, lock-free.
  void arrival() override { arrivals_.fetch_add(1, std::memory_order_relaxed); }
  // A request's handler call finished after `service`. Thread-safe; a no-op (nothing is
  // kept) unless start_csv() was called.
  void completion(std::chrono::nanoseconds service) override;
  // The model's gauges, sampled once per row and at each scrape; the rules of
  // serving::MetricsSink::set_gauges.
  void set_gauges(GaugeFn gauges) override;
  // The database's counters, sampled once per row; the same rules as set_gauges.
  void set_db_counters(DbCounterFn counters);

  // ---- Prometheus (/metrics): counters and histograms since the start ----
  enum class Root { Create, Transactions, Invalid };  // Invalid: refused before it had a kind
  // A request's outcome as its Prometheus label (exchange_requests_total{outcome}): "ok",
  // "rejected", "unavailable" (engine reloading, stepped down, a large request refused as busy)
  // or "failed" (the commit failed or its outcome is unknown).
  static const char* label_of(Outcome outcome);
  // A request's reply went out `latency` after the handler took it (commit wait included).
  void request_answered(Root root, Outcome outcome, std::chrono::nanoseconds latency);
  // A reply waited this long for its group commit (after the handler had applied it).
  void commit_waited(std::chrono::nanoseconds wait);
  // A group commit of `requests` requests took `duration`.
  void committed(std::size_t requests, std::chrono::nanoseconds duration);
  void commit_failed();
  // The exchange's own gauges, sampled at each scrape; the same rules as set_gauges.
  struct StateGauges {
    long orders_resting = -1;
    long available = -1;      // 1 serving, 0 while the engine is reloaded after a failed write
    long journal_seq = -1;    // the last journal entry committed
    long projected_seq = -1;  // the SQL tables hold every entry up to this one
    long projection_lag_rows = -1;    // rows waiting to be projected
    long projection_lag_ms = -1;      // how long the oldest entry not yet projected has waited
    long projection_failures = -1;    // failed projection writes since the start
    long commit_stalled_ms = -1;      // how long the group commit has been at its current batch
    long heavy_queued = -1;           // heavy requests waiting for their turn (HeavyRequests)
    long heavy_in_flight_bytes = -1;  // bytes of heavy requests started, not yet answered
    long heavy_refused = -1;          // heavy requests refused: the queue was full
    long heavy_paused = -1;           // 1 while heavy requests wait for the projection
    long memory_resident_bytes = -1;  // the process's resident memory (MemoryBudget)
    long memory_refused = -1;         // requests refused over the memory budget
    long role = -1;                   // 1 active (holds the writer lock), 0 standby
    long standby_lag_entries = -1;    // standby: journal entries committed, not yet applied
    long standby_lag_ms = -1;         // standby: since it last had every committed entry
  };
  void set_state(std::function<StateGauges()> state);
  // The authentication gate whose refusals (by reason) and principals /metrics reports; set
  // once, before serving.
  void set_auth(std::shared_ptr<const auth::Gate> gate) { auth_ = std::move(gate); }
  // The whole exposition, gauges sampled now.
  std::string prometheus_text();

  // Writes the header and then one row per second to `path` (truncated) until stop().
  // Throws std::runtime_error if the file cannot be opened.
  void start_csv(const std::string& path);
  // Stops the writer (the partial second since the last row is not written). Idempotent.
  void stop();

 private:
  void write_loop();
  void write_row();
  // Every gauge function's current values, taken together under gauges_mutex_.
  struct Sample {
    Gauges gauges;
    DbCounters db;
    StateGauges state;
  };
  Sample sample();
  // What one scrape of /metrics reads: the gauges sampled now, this object's counters and
  // histograms, and the process's resident memory in KiB (-1 if unknown).
  struct Scrape : Sample {
    const Metrics* metrics;
    long rss_kb;
  };
  // The families /metrics exposes, in order (observability/metrics_rows.cpp). A static member so
  // that the rows may read the private counters.
  static const std::vector<prometheus::Row<Scrape>> kRows;

  static constexpr int kRoots = 3, kLabels = 4;  // kLabels: label_of's values
  // The labels of exchange_requests_total: root by Root, outcome by label_of's index.
  static constexpr const char* kRootNames[kRoots] = {"create", "transactions", "invalid"};
  static constexpr const char* kLabelNames[kLabels] = {"ok", "rejected", "unavailable", "failed"};
  std::atomic<std::uint64_t> answered_[kRoots][kLabels] = {};
  std::atomic<std::uint64_t> commits_failed_{0};
  prometheus::Histogram request_seconds_;
  prometheus::Histogram commit_wait_seconds_;
  prometheus::Histogram commit_seconds_;
  prometheus::Histogram batch_requests_;
  std::function<StateGauges()> state_;  // guarded by gauges_mutex_
  std::shared_ptr<const auth::Gate> auth_;

  std::atomic<bool> enabled_{false};
  std::atomic<std::uint64_t> arrivals_{0};
  std::mutex samples_mutex_;
  std::vector<std::int64_t> samples_ns_;  // service times since the last row
  std::mutex gauges_mutex_;
  GaugeFn gauges_;
  DbCounterFn db_counters_;  // guarded by gauges_mutex_
  std::mutex writer_mutex_;
  std::condition_variable writer_wake_;
  bool stopping_ = false;
  std::ofstream out_;
  std::thread writer_;
};

// Resident set size of this process in KiB (from /proc/self/statm), or -1 if unknown.
long resident_kb();

}  // namespace app

// The families of /metrics as rows: name, type, help and how each reads its series from a
// Scrape, in the order Metrics::prometheus_text writes them. A row whose value is -1 (does not
// apply to this concurrency model, role or configuration) reads no series and is left out.
#include <algorithm>
#include <string>

#include "observability/metrics.hpp"

namespace app {
namespace {

namespace p = prometheus;

// One unlabelled series, whatever its value (a count kept here, never "does not apply").
p::SeriesList unlabelled(double value) { return {{"", "", value}}; }

}  // namespace

// Defined as a member, so the rows' readers may see the counters and histograms of
// Scrape::metrics.
const std::vector<p::Row<Metrics::Scrape>> Metrics::kRows = {
    {"exchange_requests_total", "counter",
     "Requests answered, by root element and outcome (ok: answered normally, item errors "
     "included; rejected: refused as a whole (malformed, over a limit or the memory budget); "
     "unavailable: the engine was reloading, the server stepped down or is the standby, or a "
     "large request was refused as busy; failed: the commit failed or its outcome is unknown).",
     [](const Scrape& s) {
       p::SeriesList out;
       for (int r = 0; r < kRoots; ++r)
         for (int o = 0; o < kLabels; ++o)
           out.push_back(
               {"",
                std::string("root=\"") + kRootNames[r] + "\",outcome=\"" + kLabelNames[o] + "\"",
                static_cast<double>(s.metrics->answered_[r][o].load(std::memory_order_relaxed))});
       return out;
     }},
    {"exchange_request_duration_seconds", "histogram",
     "From the handler taking a request to its reply, the group-commit wait included.",
     [](const Scrape& s) { return s.metrics->request_seconds_.series(); }},
    {"exchange_commit_wait_seconds", "histogram",
     "How long an applied request waited for its group commit.",
     [](const Scrape& s) { return s.metrics->commit_wait_seconds_.series(); }},
    {"exchange_commit_duration_seconds", "histogram",
     "Duration of each successful group commit (one statement, one transaction).",
     [](const Scrape& s) { return s.metrics->commit_seconds_.series(); }},
    {"exchange_commit_batch_requests", "histogram", "Requests per successful group commit.",
     [](const Scrape& s) { return s.metrics->batch_requests_.series(); }},
    {"exchange_commits_failed_total", "counter",
     "Group commits that failed (their requests got an error; the engine was reloaded).",
     [](const Scrape& s) {
       return unlabelled(
           static_cast<double>(s.metrics->commits_failed_.load(std::memory_order_relaxed)));
     }},

    // The concurrency model's (serving::Gauges).
    {"exchange_connections_open", "gauge", "Client connections open now.",
     [](const Scrape& s) { return p::single(s.gauges.connections); }},
    {"exchange_connections_refused_total", "counter",
     "Connections turned away with 'Server busy' (--max-connections).",
     [](const Scrape& s) { return p::single(s.gauges.refused); }},
    {"exchange_connections_pending", "gauge",
     "Of the open connections, those not yet authenticated (TLS handshake, logon, or the first "
     "request without --principals).",
     [](const Scrape& s) { return p::single(s.gauges.pending); }},
    {"exchange_connections_evicted_total", "counter",
     "Connections not yet authenticated that were closed to make room for a newcomer "
     "(--max-connections, --max-pending-connections).",
     [](const Scrape& s) { return p::single(s.gauges.evicted); }},
    {"exchange_buffered_bytes", "gauge",
     "Bytes client connections buffer now: requests being received or with the handler, "
     "replies not yet written (bounded by --max-buffered-bytes).",
     [](const Scrape& s) { return p::single(s.gauges.buffered_bytes); }},
    {"exchange_buffered_bytes_limit", "gauge", "--max-buffered-bytes.",
     [](const Scrape& s) { return p::single(s.gauges.buffered_limit); }},
    {"exchange_buffer_refusals_total", "counter",
     "Connections told 'Server busy' and closed because client buffers were at "
     "--max-buffered-bytes.",
     [](const Scrape& s) { return p::single(s.gauges.buffer_refused); }},
    {"exchange_threads", "gauge", "Threads of the concurrency model that run requests.",
     [](const Scrape& s) { return p::single(s.gauges.threads); }},
    {"exchange_busy_threads", "gauge", "Of those, threads running a request now.",
     [](const Scrape& s) { return p::single(s.gauges.busy); }},
    {"exchange_queue_length", "gauge", "Requests framed and waiting for a worker.",
     [](const Scrape& s) { return p::single(s.gauges.queued); }},
    {"exchange_pool_target_threads", "gauge", "The self-sizing pool's target size.",
     [](const Scrape& s) { return p::single(s.gauges.target); }},

    // The exchange's (StateGauges).
    {"exchange_role", "gauge",
     "1 for the role this server has now: active (holds the writer lock and serves) or standby "
     "(--standby: follows the journal, serves nothing until it takes over).",
     [](const Scrape& s) {
       if (s.state.role < 0) return p::SeriesList{};
       return p::SeriesList{{"", "role=\"active\"", s.state.role == 1 ? 1.0 : 0.0},
                            {"", "role=\"standby\"", s.state.role == 0 ? 1.0 : 0.0}};
     }},
    {"exchange_standby_lag_entries", "gauge",
     "Standby: journal entries the active server committed that this standby has not applied "
     "yet (as of its last look, every few milliseconds).",
     [](const Scrape& s) { return p::single(s.state.standby_lag_entries); }},
    {"exchange_standby_lag_seconds", "gauge",
     "Standby: how long since it last had applied every journal entry committed by then (how "
     "stale its state may be).",
     [](const Scrape& s) { return p::seconds_from_ms(s.state.standby_lag_ms); }},
    {"exchange_orders_resting", "gauge", "Open orders in memory (resting on the books).",
     [](const Scrape& s) { return p::single(s.state.orders_resting); }},
    {"exchange_available", "gauge",
     "1 while serving, 0 while the engine is reloaded from the database after a failed write.",
     [](const Scrape& s) { return p::single(s.state.available); }},
    {"exchange_journal_seq", "gauge",
     "The last journal entry committed (one per mutating request).",
     [](const Scrape& s) { return p::single(s.state.journal_seq); }},
    {"exchange_projection_lag_entries", "gauge",
     "Journal entries not yet in the SQL tables (accounts, positions, orders, executions).",
     [](const Scrape& s) {
       if (s.state.journal_seq < 0 || s.state.projected_seq < 0) return p::SeriesList{};
       return p::single(std::max(0L, s.state.journal_seq - s.state.projected_seq));
     }},
    {"exchange_projection_lag_rows", "gauge",
     "Rows (account, position, order, execution changes) waiting to be projected.",
     [](const Scrape& s) { return p::single(s.state.projection_lag_rows); }},
    {"exchange_projection_lag_seconds", "gauge",
     "How long the oldest journal entry not yet in the SQL tables has waited.",
     [](const Scrape& s) { return p::seconds_from_ms(s.state.projection_lag_ms); }},
    {"exchange_projection_failures_total", "counter",
     "Projection writes that failed (each is retried until it succeeds).",
     [](const Scrape& s) { return p::single(s.state.projection_failures); }},
    {"exchange_commit_stalled_seconds", "gauge",
     "How long the group commit has been at its current batch (0 when idle).",
     [](const Scrape& s) { return p::seconds_from_ms(s.state.commit_stalled_ms); }},
    {"exchange_heavy_requests_waiting", "gauge",
     "Large requests (--heavy-request-bytes) waiting for their turn on the heavy thread.",
     [](const Scrape& s) { return p::single(s.state.heavy_queued); }},
    {"exchange_heavy_bytes_in_flight", "gauge",
     "Bytes of large requests started and not yet answered (--max-heavy-bytes-in-flight).",
     [](const Scrape& s) { return p::single(s.state.heavy_in_flight_bytes); }},
    {"exchange_heavy_paused", "gauge",
     "1 while large requests wait for the projection to catch up (500,000 rows behind).",
     [](const Scrape& s) { return p::single(s.state.heavy_paused); }},
    {"exchange_heavy_requests_refused_total", "counter",
     "Large requests refused at once: too many were waiting (--max-heavy-bytes-queued).",
     [](const Scrape& s) { return p::single(s.state.heavy_refused); }},
    {"exchange_memory_resident_bytes", "gauge", "The server's resident memory.",
     [](const Scrape& s) { return p::single(s.state.memory_resident_bytes); }},
    {"exchange_memory_refused_total", "counter",
     "Requests refused because the server was over --max-memory-bytes.",
     [](const Scrape& s) { return p::single(s.state.memory_refused); }},

    // The database's (DbCounters).
    {"exchange_db_timeouts_total", "counter", "PostgreSQL calls cut off by --db-timeout-ms.",
     [](const Scrape& s) { return p::single(s.db.timeouts); }},
    {"exchange_db_reconnects_total", "counter", "New write connections after a broken one.",
     [](const Scrape& s) { return p::single(s.db.reconnects); }},
    {"exchange_archive_queries_total", "counter",
     "PostgreSQL statements reading queried orders no longer in memory "
     "(--closed-orders-cached): one per request, however many such orders it queries.",
     [](const Scrape& s) { return p::single(s.db.archive_statements); }},
    {"exchange_archive_orders_total", "counter", "Orders read by those statements.",
     [](const Scrape& s) { return p::single(s.db.archive_orders); }},
    {"exchange_archive_refused_total", "counter",
     "Requests whose archived orders were not read: too many lookups were waiting "
     "(--archive-connections).",
     [](const Scrape& s) { return p::single(s.db.archive_refused); }},
    {"exchange_archive_waiting", "gauge", "Requests waiting for an archive connection.",
     [](const Scrape& s) { return p::single(s.db.archive_waiting); }},
    {"exchange_archive_connections", "gauge",
     "PostgreSQL connections of the order archive open now (at most --archive-connections).",
     [](const Scrape& s) { return p::single(s.db.archive_connections); }},

    // The authentication gate's, with --principals only.
    {"exchange_auth_refusals_total", "counter",
     "Connections and requests refused by authentication (--principals), by reason: bad_key, "
     "locked_out, key_needs_tls, not_authenticated, unknown_certificate (logons and "
     "connections); unknown_principal, session_ended, account_not_permitted, trade_not_permitted, "
     "create_not_permitted (requests, refused whole before anything is journaled).",
     [](const Scrape& s) {
       p::SeriesList out;
       if (!s.metrics->auth_) return out;
       const auto refusals = s.metrics->auth_->refusals();
       for (std::size_t i = 0; i < auth::kRefusalCount; ++i)
         out.push_back(
             {"",
              std::string("reason=\"") + auth::refusal_label(static_cast<auth::Refusal>(i)) + "\"",
              static_cast<double>(refusals[i])});
       return out;
     }},
    {"exchange_auth_principals", "gauge", "Principals in force (the last good --principals file).",
     [](const Scrape& s) {
       if (!s.metrics->auth_) return p::SeriesList{};
       return unlabelled(static_cast<double>(s.metrics->auth_->principals()->size()));
     }},

    {"process_resident_memory_bytes", "gauge", "Resident memory size in bytes.",
     [](const Scrape& s) {
       if (s.rss_kb < 0) return p::SeriesList{};
       return unlabelled(static_cast<double>(s.rss_kb) * 1024);
     }},
};

}  // namespace app

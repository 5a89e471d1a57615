#include "app/settings.hpp"

#include "gates/settings.hpp"
#include "protocol/parse_settings.hpp"

namespace app {

namespace {
const std::string kLimits = "Request limits";
const std::string kDurability = "Durability and projection";
}  // namespace

void declare_settings(util::Settings& s, HandlerLimits& l) {
  protocol::declare_settings(s, l.parse);
  s.add("heavy-request-bytes", kLimits, &l.heavy.heavy_bytes)
      .at_least(1)
      .unit("bytes")
      .help(
          "a request this large or larger is heavy: heavy requests run one at a time on a "
          "thread of their own, so they cannot crowd out small ones");
  s.add("max-heavy-bytes-in-flight", kLimits, &l.heavy.in_flight_bytes)
      .at_least(1)
      .unit("bytes")
      .help(
          "heavy requests start only while the bytes of those started and not yet answered "
          "stay within this (one always may): it bounds what they add to a group commit");
  s.add("max-heavy-bytes-queued", kLimits, &l.heavy.queued_bytes)
      .at_least(1)
      .unit("bytes")
      .help(
          "heavy requests waiting for their turn may hold this many bytes; one more is refused "
          "with 'Server busy'");
  s.add("max-heavy-wait-ms", kLimits, &l.heavy.max_wait)
      .at_least(1)
      .unit("ms")
      .help(
          "a heavy request not started within this (the projection or the database is behind) "
          "is refused with 'Server busy'");
  s.add("max-memory-bytes", kLimits, &l.max_memory_bytes)
      .unit("bytes")
      .help(
          "the memory budget: while the server's resident memory is over it, requests that "
          "create accounts, positions or orders are refused (queries and cancels still run); "
          "0: none");
}

void declare_settings(util::Settings& s, DurableEngineOptions& o) {
  declare_settings(s, o.limits);
  s.add("max-projection-rows", kDurability, &o.max_projection_rows)
      .at_least(1)
      .help(
          "while this many rows wait to be projected into the SQL tables, group commits (and so "
          "every reply) wait: bounds the memory of queued rows and the journal a restart "
          "replays");
  s.add("heavy-pause-projection-rows", kDurability, &o.heavy_pause_projection_rows)
      .at_least(1)
      .help(
          "while this many rows wait to be projected, heavy requests wait before they start "
          "(below --max-projection-rows, so small requests keep being answered)");
  s.add("projection-gather-ms", kDurability, &o.projection_gather)
      .unit("ms")
      .help(
          "committed effects gather this long before they are written into the SQL tables "
          "together (the last row per account, position and order wins, so under load fewer "
          "rows are written per request); written sooner once 100,000 rows wait or no request "
          "has changed anything for 50 ms. Under load the tables trail the journal by about "
          "this much plus one write");
  s.add("journal-keep", kDurability, &o.journal_keep)
      .at_least(0)
      .help(
          "journal entries to keep once the SQL tables hold their effects: older ones are "
          "deleted as the projection advances, so the journal stops growing (restarts need only "
          "the entries after the projection). 0 keeps the whole journal, every request ever "
          "accepted");
  s.add("closed-orders-cached", kDurability, &o.closed_orders_cached)
      .help(
          "closed orders kept in memory for queries; older ones are read from the database, so "
          "memory stays flat however long the server runs");
  s.add("archive-connections", kDurability, &o.archive_connections)
      .at_least(1)
      .help(
          "threads, each with one PostgreSQL connection, that read queried orders no longer in "
          "memory (one statement per request, off the threads serving clients); up to " +
          std::to_string(store::OrderArchive::kWaitingPerConnection) +
          " requests per connection wait for them, and further ones get 'Server busy' for those "
          "queries");
  s.add("reads-on-lease", kDurability, &o.reads_on_lease)
      .help(
          "answer queries (and requests that change nothing) from memory once the writer lease "
          "is found valid after reading, without waiting for a commit that started after them: "
          "faster, but a server whose lock session PostgreSQL ended unseen may answer stale "
          "for up to --lease-ms (docs/DURABILITY.md, \"Reads\")");
  // Not in --help: tests hold the projection back to exercise the journal replay.
  s.add("projector-delay-ms", kDurability, &o.projector_delay).hidden();
}

void declare_settings(util::Settings& s, StandbyOptions& o) {
  s.add("standby-poll-ms", "High availability", &o.poll_every)
      .between(1, 10000)
      .unit("ms")
      .help(
          "with --standby: how long it waits, once it has read the journal to its end, before "
          "reading it again (one statement each time). Longer costs the active server less and "
          "leaves the standby that much further behind (a takeover still reads the journal to "
          "its end first)");
}

}  // namespace app

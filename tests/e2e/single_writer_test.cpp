// One writer per database. A second server started on the database of a running one is
// refused within seconds, names the session holding the writer lock, and changes nothing (it
// is started with --reset: on a shared database that would have emptied the first one's
// tables). And a server whose writer lock goes to another server (its lock session killed
// while the other waits for it) is fenced: it appends nothing after the other's start, says
// that it stepped down, and exits 4, while the other serves everything it acknowledged. A
// server starts while another session's transaction holds the tables (the schema's upgrade
// steps take no table lock once done).
#include <chrono>
#include <regex>
#include <string>

#include <catch2/catch.hpp>

#include "support/checks.hpp"
#include "support/random_traders.hpp"
#include "support/reply_xml.hpp"
#include "support/server_process.hpp"
#include "support/test_database.hpp"
#include "support/wire_client.hpp"

using namespace testing_support;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

// The writer lock in pg_locks: the advisory lock on leadership::WriterLock::kKey, a bigint that
// pg_locks splits into classid (high half) and objid (low half).
const std::string kWriterLock =
    "locktype = 'advisory' AND classid = 1163412296 AND objid = 1465010516 AND objsubid = 1";

}  // namespace

TEST_CASE("a second server on the same database is refused within seconds, naming the holder",
          "[e2e]") {
  ServerProcess first({"--concurrency", "pool", "--reset"});
  create_traders(first.port(), 800, 6, "SW");
  RandomTraders traders(first.port(), 3, 800, 6, "SW", 11);
  REQUIRE(wait_until([&] { return traders.acknowledged() > 10; }, 10s, 50ms));
  // The session holding the lock: the first server's.
  const std::string holder =
      query_value_now("SELECT coalesce(string_agg(pid::text, ','), 'none') FROM pg_locks WHERE " +
                      kWriterLock + " AND granted");

  const auto started = Clock::now();
  // --reset: if it got anywhere near the tables, the first server's state would be gone.
  ServerProcess second({"--concurrency", "pool", "--reset"}, ServerProcess::Start::Launched);
  const auto code = second.wait_exit_for(20s);
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started);
  const std::string log = second.log();
  INFO("the second server's log:\n" << log);
  REQUIRE(code.has_value());  // it did not start serving beside the first
  CHECK(*code == 1);
  CHECK(took < 15s);
  CHECK(contains(log, "another server is writing this database"));
  CHECK(contains(log, "held by backend pid " + holder + " (application_name exchange-writer-lock"));

  // The first server was not disturbed: it goes on serving, and keeps all it acknowledged.
  const int before = traders.acknowledged();
  CHECK(wait_until([&] { return traders.acknowledged() > before + 20; }, 10s, 50ms));
  auto acked = traders.stop();
  CHECK(traders.error_replies() == 0);
  CHECK(missing_orders(first.port(), acked).empty());
  // Nor did the second server's --reset reach the database: the journal still begins with
  // the first request, and the tables hold every acknowledged order.
  CHECK(query_value_now("SELECT min(seq) FROM journal") == "1");
  std::string ids;
  for (const auto& [id, ack] : acked) ids += (ids.empty() ? "" : ",") + std::to_string(id);
  CHECK(query_value("SELECT count(*) FROM orders WHERE id IN (" + ids + ")") ==
        std::to_string(acked.size()));
  check_conservation();
  CHECK(first.stop() == 0);
}

TEST_CASE("a server whose writer lock went to another is fenced: it appends nothing more",
          "[e2e]") {
  ServerProcess a({"--concurrency", "pool", "--reset"});
  create_traders(a.port(), 820, 6, "FA");
  // A's requests are told apart in the journal by their accounts (820-825) and symbol FA.
  RandomTraders a_load(a.port(), 3, 820, 6, "FA", 21);
  REQUIRE(wait_until([&] { return a_load.acknowledged() > 10; }, 10s, 50ms));

  // B queues for the lock in PostgreSQL behind A.
  ServerProcess b({"--concurrency", "pool", "--writer-lock-wait-ms", "60000"},
                  ServerProcess::Start::Launched);
  const bool queued = wait_until(
      [&] {
        return query_value_now("SELECT count(*) FROM pg_locks WHERE " + kWriterLock +
                               " AND NOT granted") == "1";
      },
      20s, 50ms);
  INFO("B queued for the writer lock: " << queued);
  // Kill A's lock session: B gets the lock at once and bumps the writer epoch; A's keeper
  // finds the lock taken when it tries to take it back.
  query_value_now("SELECT count(pg_terminate_backend(pid)) FROM pg_locks WHERE " + kWriterLock +
                  " AND granted");
  const bool b_serving = b.wait_listening(30s);
  INFO("B's log:\n" << b.log());
  REQUIRE(b_serving);

  // A may not acknowledge anything from now on.
  ParsedReply late;
  std::string late_reply;
  try {
    late_reply = send_request(
        a.port(),
        "<transactions id=\"820\"><order sym=\"FA\" amount=\"1\" limit=\"1\"/></transactions>");
  } catch (const std::exception& e) {
    late_reply = std::string("(no reply: ") + e.what() + ")";  // A has stopped listening
  }
  INFO("A's reply after B started: " << late_reply);
  CHECK_FALSE(contains(late_reply, "<opened"));
  CHECK((contains(late_reply, "another exchange server took over this database") ||
         contains(late_reply, "(no reply")));

  // A steps down by itself.
  const auto a_code = a.wait_exit_for(15s);
  auto a_acked = a_load.stop();
  const std::string a_log = a.log();
  INFO("A's log:\n" << a_log);
  REQUIRE(a_code.has_value());
  CHECK(*a_code == 4);
  CHECK(contains(a_log, "fenced: another server took over the database"));
  CHECK(contains(a_log, "stepping down"));
  CHECK(a_log.find("fenced:") == a_log.rfind("fenced:"));  // said once

  // B serves, and has everything A acknowledged.
  create_traders(b.port(), 840, 6, "FB");
  RandomTraders b_load(b.port(), 3, 840, 6, "FB", 31);
  CHECK(wait_until([&] { return b_load.acknowledged() > 20; }, 10s, 50ms));
  auto b_acked = b_load.stop();
  CHECK(b_load.error_replies() == 0);
  CHECK(missing_orders(b.port(), a_acked).empty());
  CHECK(missing_orders(b.port(), b_acked).empty());

  // The journal: B continued after what it loaded, and no entry from that seq on is A's.
  std::smatch m;
  const std::string b_log = b.log();
  REQUIRE(std::regex_search(b_log, m, std::regex("next seq ([0-9]+)")));
  const std::string b_first = m[1];
  const std::string a_rows =
      "(request LIKE '%sym=\"FA\"%' OR request ~ '^<transactions id=\"82[0-5]\"')";
  CHECK(query_value_now("SELECT count(*) FROM journal WHERE seq >= " + b_first + " AND " +
                        a_rows) == "0");
  CHECK(query_value_now(
            "SELECT count(*) FROM journal WHERE seq >= (SELECT min(seq) FROM journal WHERE "
            "request LIKE '%sym=\"FB\"%') AND " +
            a_rows) == "0");
  CHECK(query_value_now("SELECT count(*) FROM journal WHERE seq >= " + b_first) != "0");
  check_conservation();
  CHECK(b.stop() == 0);
}

TEST_CASE("a server whose writer epoch was bumped is fenced at its next append", "[e2e]") {
  // The keeper is not told (the lock stays with the server): only the fence in the append's
  // own statement can stop it.
  ServerProcess server({"--concurrency", "pool", "--reset"});
  create_traders(server.port(), 860, 6, "FE");
  RandomTraders traders(server.port(), 3, 860, 6, "FE", 41);
  REQUIRE(wait_until([&] { return traders.acknowledged() > 10; }, 10s, 50ms));
  // What another writer does to the journal's fence after taking the lock (its bump moves the
  // projection's too, projection_position.epoch; the projection also checks writer_epoch). The
  // bump waits for an append in flight; once it has committed, whatever the journal holds is
  // all there may ever be.
  query_value_now(
      "UPDATE writer_epoch SET epoch = epoch + 1, holder = 'single_writer_test', since = now() "
      "RETURNING epoch");
  const std::string bumped_at = query_value_now("SELECT coalesce(max(seq), 0) FROM journal");

  const auto code = server.wait_exit_for(15s);
  auto acked = traders.stop();
  const std::string log = server.log();
  INFO("the server's log:\n" << log);
  REQUIRE(code.has_value());
  CHECK(*code == 4);
  CHECK(contains(log, "fenced: another server took over the database (epoch "));
  CHECK(contains(log, "holder single_writer_test"));
  CHECK(log.find("fenced:") == log.rfind("fenced:"));
  CHECK(!contains(log, "reloading state"));  // no recovery attempt
  // The requests of the fenced batch were answered with the step-down error.
  CHECK(traders.error_replies() > 0);
  // Nothing was appended after the bump.
  CHECK(query_value_now("SELECT coalesce(max(seq), 0) FROM journal") == bumped_at);

  // Everything it acknowledged is there for the next server.
  server.restart();
  CHECK(missing_orders(server.port(), acked).empty());
  check_conservation();
  CHECK(server.stop() == 0);
}

TEST_CASE("a server starts while another session's transaction holds the tables", "[e2e]") {
  // As a paused server's projection write or journal append in flight does: schema.sql adds
  // the columns it lacks without ALTER TABLE's lock on a table that has them all, which would
  // wait for that transaction (and fail the start once --db-timeout-ms times 10 ran out).
  {
    ServerProcess first({"--reset"});  // the schema, complete
    REQUIRE(first.stop() == 0);
  }
  auto conn = connect_database();
  pqxx::work holder(conn);
  holder.exec("LOCK TABLE orders, executions, journal, projection_position IN ROW EXCLUSIVE MODE");
  // Before, applying the schema waited for `holder` until 10x --db-timeout-ms and the start
  // failed: this constructor threw.
  ServerProcess server({"--concurrency", "pool", "--db-timeout-ms", "1000"});
  const std::string reply =
      send_request(server.port(), "<create><account id=\"870001\" balance=\"5\"/></create>");
  CHECK(contains(reply, "<created"));
  holder.abort();
  CHECK(server.stop() == 0);
}

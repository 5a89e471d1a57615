// store::Projector alone against the test PostgreSQL: queued batches written in order with
// projection_position, the backlog it reports, a failed write retried on a fresh connection
// and counted, and fence() stopping every write.
#include "store/projector.hpp"

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <thread>

#include <catch2/catch.hpp>
#include <pqxx/pqxx>

#include "store/database.hpp"
#include "store/pg_store.hpp"
#include "support/server_process.hpp"
#include "support/test_database.hpp"

using namespace testing_support;
using namespace std::chrono_literals;
using market::Decimal;

namespace {

// The PostgreSQL projection writer, as the server's store opens it.
std::unique_ptr<store::ProjectionWriter> pg_writer(std::int64_t epoch,
                                                   std::chrono::milliseconds timeout) {
  return store::PgStore(database_url(), timeout).projection_writer({epoch});
}

// One request's effects: account `id` with `balance`.
store::DeferredEffects account_effects(const std::string& id, int balance) {
  market::Effects fx;
  fx.accounts.push_back({id, Decimal::from_int(balance), Decimal::from_int(balance)});
  store::DeferredEffects effects;
  effects.add(std::move(fx));
  return effects;
}

// A fresh schema and empty tables; returns the writer epoch the server left.
std::int64_t fresh_schema() {
  ServerProcess server({"--reset"});
  REQUIRE(server.stop() == 0);
  return std::stoll(query_value("SELECT epoch FROM writer_epoch"));
}

bool eventually(const std::function<bool()>& done, std::chrono::milliseconds at_most = 15s) {
  const auto deadline = std::chrono::steady_clock::now() + at_most;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

std::string stored_position() { return query_value("SELECT seq FROM projection_position"); }

std::string balance_of(const std::string& id) {
  return query_value("SELECT coalesce((SELECT balance::text FROM accounts WHERE id = '" + id +
                     "'), 'none')");
}

// The projector's backend, or 0 while it has no connection.
int projector_pid() {
  return std::stoi(
      query_value("SELECT coalesce(max(pid), 0) FROM pg_stat_activity "
                  "WHERE application_name = 'exchange-projector'"));
}

}  // namespace

TEST_CASE("queued batches are written in order, with projection_position; the backlog drains",
          "[e2e][projector]") {
  const std::int64_t epoch = fresh_schema();
  // Each write held back 400 ms, so the backlog can be seen.
  store::Projector projector(pg_writer(epoch, 5s), 5s, 0, 400ms);
  projector.start();
  CHECK(projector.pending_rows() == 0);
  CHECK(projector.oldest_unprojected() == 0ms);

  projector.enqueue(account_effects("910001", 1), 1);
  projector.enqueue(account_effects("910002", 2), 2);
  projector.enqueue(account_effects("910001", 5), 3);  // supersedes seq 1's row
  CHECK(projector.queued_seq() == 3);
  CHECK(projector.pending_rows() == 3);
  std::this_thread::sleep_for(150ms);
  CHECK(projector.oldest_unprojected() >= 150ms);
  CHECK(projector.projected_seq() == 0);
  CHECK(stored_position() == "0");

  REQUIRE(eventually([&] { return projector.projected_seq() == 3; }));
  CHECK(stored_position() == "3");
  CHECK(balance_of("910001") == "5");  // the later row won
  CHECK(balance_of("910002") == "2");
  CHECK(projector.pending_rows() == 0);
  CHECK(projector.oldest_unprojected() == 0ms);
  CHECK(projector.failures().total == 0);

  // A later batch moves the position on; an earlier one never moves it back.
  projector.enqueue(account_effects("910003", 3), 4);
  REQUIRE(eventually([&] { return projector.projected_seq() == 4; }));
  CHECK(stored_position() == "4");
  CHECK(balance_of("910003") == "3");
  CHECK(projector.pending_rows() == 0);
  projector.stop();
}

TEST_CASE(
    "rows merged already and deferred effects are written together, in several statements "
    "when they outnumber one",
    "[e2e][projector]") {
  const std::int64_t epoch = fresh_schema();
  // Held back so that both land in one write; the first alone needs two statements.
  store::Projector projector(pg_writer(epoch, 5s), 5s, 0, 400ms);
  projector.start();
  const std::size_t per_statement = store::Database::kRowsPerPace;  // changed rows
  store::ProjectionRows merged;  // as a replay hands over a chunk
  for (std::size_t i = 0; i < per_statement + 5; ++i) {
    market::Effects fx;
    fx.accounts.push_back({"97" + std::to_string(i), Decimal::from_int(1), Decimal::from_int(1)});
    merged.merge(std::move(fx));
  }
  projector.enqueue(std::move(merged), 1);
  store::DeferredEffects deferred;  // as the group commit hands them on
  for (std::size_t i = per_statement / 2; i < per_statement + 10; ++i) {
    market::Effects fx;
    fx.accounts.push_back({"97" + std::to_string(i), Decimal::from_int(2), Decimal::from_int(1)});
    deferred.add(std::move(fx));
  }
  projector.enqueue(std::move(deferred), 2);
  CHECK(projector.pending_rows() == (per_statement + 5) + (per_statement / 2 + 10));

  REQUIRE(eventually([&] { return projector.projected_seq() == 2; }));
  CHECK(stored_position() == "2");
  CHECK(query_value("SELECT count(*) FROM accounts WHERE id LIKE '97%'") ==
        std::to_string(per_statement + 10));
  CHECK(query_value("SELECT count(*) FROM accounts WHERE id LIKE '97%' AND balance = 2") ==
        std::to_string(per_statement / 2 + 10));  // the deferred rows are the later ones
  CHECK(projector.pending_rows() == 0);
  CHECK(projector.failures().total == 0);
  projector.stop();
}

TEST_CASE("a write that outlives the timeout on a locked table is retried on a fresh connection",
          "[e2e][projector]") {
  const std::int64_t epoch = fresh_schema();
  store::Projector projector(pg_writer(epoch, 500ms), 500ms);
  projector.start();
  REQUIRE(eventually([] { return projector_pid() != 0; }));
  const int first_pid = projector_pid();

  auto blocker = connect_database();
  pqxx::work lock(blocker);
  lock.exec("LOCK TABLE accounts IN ACCESS EXCLUSIVE MODE");
  projector.enqueue(account_effects("920001", 7), 1);
  REQUIRE(eventually([&] { return projector.failures().total >= 1; }));
  CHECK(projector.failures().in_a_row >= 1);
  CHECK_FALSE(projector.failures().last_error.empty());
  CHECK(projector.pending_rows() == 1);  // still waiting
  CHECK(projector.projected_seq() == 0);
  lock.abort();

  REQUIRE(eventually([&] { return projector.projected_seq() == 1; }));
  CHECK(balance_of("920001") == "7");
  CHECK(stored_position() == "1");
  const auto failures = projector.failures();
  CHECK(failures.in_a_row == 0);
  CHECK(failures.total >= 1);
  CHECK(projector.pending_rows() == 0);
  // Written on a new connection; the timed-out backend was ended.
  const int pid = projector_pid();
  CHECK(pid != 0);
  CHECK(pid != first_pid);
  CHECK(query_value("SELECT count(*) FROM pg_stat_activity WHERE pid = " +
                    std::to_string(first_pid)) == "0");
  projector.stop();
}

TEST_CASE("a write on a terminated backend is retried on a fresh connection and counted",
          "[e2e][projector]") {
  const std::int64_t epoch = fresh_schema();
  store::Projector projector(pg_writer(epoch, 5s), 5s);
  projector.start();
  REQUIRE(eventually([] { return projector_pid() != 0; }));
  const int first_pid = projector_pid();
  CHECK(query_value("SELECT pg_terminate_backend(" + std::to_string(first_pid) + ")") == "t");

  projector.enqueue(account_effects("930001", 9), 1);
  REQUIRE(eventually([&] { return projector.projected_seq() == 1; }));
  CHECK(balance_of("930001") == "9");
  CHECK(stored_position() == "1");
  const auto failures = projector.failures();
  CHECK(failures.total == 1);
  CHECK(failures.in_a_row == 0);
  CHECK_FALSE(failures.last_error.empty());
  CHECK(projector_pid() != first_pid);
  projector.stop();
}

TEST_CASE("fence() stops every write and drops the queue", "[e2e][projector]") {
  const std::int64_t epoch = fresh_schema();
  store::Projector projector(pg_writer(epoch, 5s), 5s, 0, 500ms);
  projector.start();
  projector.enqueue(account_effects("940001", 1), 1);
  projector.enqueue(account_effects("940002", 2), 2);
  CHECK(projector.pending_rows() == 2);
  projector.fence();
  CHECK(projector.pending_rows() == 0);
  CHECK(projector.oldest_unprojected() == 0ms);
  projector.wait_pending_below(1);                     // returns at once
  projector.enqueue(account_effects("940003", 3), 3);  // dropped
  CHECK(projector.pending_rows() == 0);
  CHECK(projector.queued_seq() == 2);

  std::this_thread::sleep_for(1500ms);  // past the delay and a gather
  CHECK(projector.projected_seq() == 0);
  CHECK(stored_position() == "0");
  CHECK(query_value("SELECT count(*) FROM accounts") == "0");
  projector.stop();
}

TEST_CASE("a write under a superseded writer epoch is fenced: nothing written, on_fenced once",
          "[e2e][projector]") {
  const std::int64_t epoch = fresh_schema();
  std::atomic<int> fenced_calls{0};
  std::string why;
  store::Projector projector(pg_writer(epoch, 5s), 5s, 0, 0ms, [&](const std::string& w) {
    why = w;
    ++fenced_calls;
  });
  projector.start();
  {
    // What a new writer's bump does (leadership/writer_lock.cpp): the projection's fence moves too.
    auto conn = connect_database();
    pqxx::nontransaction(conn).exec(
        "WITH bumped AS ("
        "  UPDATE writer_epoch SET epoch = epoch + 1, holder = 'test' RETURNING epoch"
        ") UPDATE projection_position SET epoch = (SELECT epoch FROM bumped)");
  }
  projector.enqueue(account_effects("950001", 1), 1);
  REQUIRE(eventually([&] { return fenced_calls.load() == 1; }));
  projector.enqueue(account_effects("950002", 2), 2);
  std::this_thread::sleep_for(500ms);
  CHECK(fenced_calls.load() == 1);
  CHECK(why.find("another server took over") != std::string::npos);
  CHECK(projector.projected_seq() == 0);
  CHECK(projector.pending_rows() == 0);
  CHECK(stored_position() == "0");
  CHECK(query_value("SELECT count(*) FROM accounts") == "0");
  CHECK(projector.failures().total == 0);
  projector.stop();
}

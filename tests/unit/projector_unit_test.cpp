// store::Projector over the in-memory store's projection writer (support/memory_store.hpp):
// gathering batches into one write, merging rows, pacing a large write, backpressure, retrying a
// failed write, and fencing. No PostgreSQL.
#include <atomic>
#include <chrono>
#include <future>
#include <string>
#include <thread>

#include <catch2/catch.hpp>

#include "store/projector.hpp"
#include "support/memory_store.hpp"

using namespace std::chrono_literals;
using market::Decimal;

namespace {

store::DeferredEffects balance(const std::string& account, std::int64_t cash) {
  market::Effects fx;
  fx.accounts.push_back({account, Decimal::from_int(cash), Decimal::from_int(cash)});
  store::DeferredEffects d;
  d.add(std::move(fx));
  return d;
}

store::ProjectionRows many_accounts(int n) {
  store::ProjectionRows rows;
  for (int i = 0; i < n; ++i) {
    market::Effects fx;
    fx.accounts.push_back({"a" + std::to_string(i), Decimal::from_int(i), Decimal::from_int(i)});
    rows.merge(std::move(fx));
  }
  return rows;
}

struct Projection {
  test::MemoryDatabase db;
  test::MemoryStore store{db};
  std::atomic<int> fenced{0};
  std::string why;
  store::Projector projector{store.projection_writer({db.epoch}), 5000ms, 0, 0ms,
                             [this](const std::string& w) {
                               why = w;
                               ++fenced;
                             }};

  explicit Projection(std::chrono::milliseconds gather = 20ms) {
    projector.gather_for(gather);
    projector.start();
  }
  bool projected(std::int64_t seq) {
    for (int i = 0; i < 5000 && projector.projected_seq() < seq; ++i)
      std::this_thread::sleep_for(1ms);
    return projector.projected_seq() >= seq;
  }
};

}  // namespace

TEST_CASE("projector: batches queued within the gather interval go in one write, last row wins") {
  Projection p(200ms);
  p.projector.enqueue(balance("1", 10), 1);
  p.projector.enqueue(balance("1", 7), 2);
  p.projector.enqueue(balance("2", 5), 3);
  REQUIRE(p.projected(3));
  std::lock_guard<std::mutex> lock(p.db.mutex);
  REQUIRE(p.db.projection_writes.size() == 1);
  CHECK(p.db.projection_writes[0].through_seq == 3);
  CHECK(p.db.projection_writes[0].rows == 3);  // counted before merging
  CHECK(p.db.projection.accounts.at("1").balance == Decimal::from_int(7));
  CHECK(p.db.position == 3);
  CHECK(p.projector.pending_rows() == 0);
}

TEST_CASE("projector: a large write is paced over most of the gather interval, a small one not") {
  Projection p(100ms);
  p.projector.enqueue(many_accounts(20000), 1);
  REQUIRE(p.projected(1));
  p.projector.enqueue(many_accounts(10), 2);
  REQUIRE(p.projected(2));
  std::lock_guard<std::mutex> lock(p.db.mutex);
  REQUIRE(p.db.projection_writes.size() == 2);
  // Spread over gather * 4/5 = 80 ms: the write itself, paces included, never faster than half.
  CHECK(p.db.projection_writes[0].took >= 40ms);
  CHECK(p.db.projection.accounts.size() == 20000);
  CHECK(p.db.projection_writes[1].rows == 10);
}

TEST_CASE("projector: commits wait while too many rows are pending, until they are written") {
  Projection p(1ms);
  {
    std::lock_guard<std::mutex> lock(p.db.mutex);
    p.db.hold_projection = true;  // the database went silent
  }
  p.projector.enqueue(many_accounts(300), 1);
  auto waiter = std::async(std::launch::async, [&] { p.projector.wait_pending_below(100); });
  CHECK(waiter.wait_for(50ms) == std::future_status::timeout);
  CHECK(p.projector.pending_rows() == 300);
  {
    std::lock_guard<std::mutex> lock(p.db.mutex);
    p.db.hold_projection = false;
  }
  p.db.changed.notify_all();
  CHECK(waiter.wait_for(5s) == std::future_status::ready);
  CHECK(p.projected(1));
}

TEST_CASE("projector: a failed write is retried until it succeeds, and counted") {
  Projection p(1ms);
  {
    std::lock_guard<std::mutex> lock(p.db.mutex);
    p.db.fail_projection_writes = 2;
  }
  p.projector.enqueue(balance("1", 10), 1);
  REQUIRE(p.projected(1));
  const auto failures = p.projector.failures();
  CHECK(failures.total == 2);
  CHECK(failures.in_a_row == 0);
  CHECK(failures.last_error.find("injected") != std::string::npos);
}

TEST_CASE("projector: a fenced write is final: on_fenced once, the queue dropped, waits end") {
  Projection p(1ms);
  p.db.bump_epoch();
  p.projector.enqueue(balance("1", 10), 1);
  for (int i = 0; i < 5000 && p.fenced == 0; ++i) std::this_thread::sleep_for(1ms);
  REQUIRE(p.fenced == 1);
  CHECK(p.why.find("another server took over the database (epoch 2") != std::string::npos);
  p.projector.enqueue(balance("1", 11), 2);
  CHECK(p.projector.pending_rows() == 0);
  p.projector.wait_pending_below(1);  // returns at once
  std::lock_guard<std::mutex> lock(p.db.mutex);
  CHECK(p.db.projection_writes.empty());
}

// app::DurableEngine over the in-memory store (support/memory_store.hpp): the durability rule
// (a result is shown only once its journal entry is stored), a failed or unknown commit and the
// reload after it, a restart from the journal and the projection, fencing and the lease. No
// PostgreSQL: each case runs in milliseconds.
#include "app/durable_engine.hpp"

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include <catch2/catch.hpp>

#include "protocol/parse.hpp"
#include "protocol/render.hpp"
#include "support/memory_store.hpp"

using app::Outcome;
using namespace std::chrono_literals;

namespace {

const std::string kCreate =
    R"(<create><account id="1" balance="1000"/><account id="2" balance="0"/>)"
    R"(<symbol sym="X"><account id="2">50</account></symbol></create>)";
const std::string kBuy =
    R"(<transactions id="1"><order sym="X" amount="10" limit="3"/></transactions>)";
const std::string kSell =
    R"(<transactions id="2"><order sym="X" amount="-4" limit="2"/></transactions>)";
const std::string kQuery1 = R"(<transactions id="1"><query id="1"/></transactions>)";

struct Engine {
  test::MemoryDatabase db;
  test::MemoryStore store{db};
  app::Metrics metrics;
  util::StopFlag stop;
  std::atomic<int> fenced{0};
  std::atomic<bool> lease{true};
  bool reads_on_lease = false;
  std::chrono::milliseconds projector_delay{0};
  std::unique_ptr<app::DurableEngine> engine;

  Engine() { start(); }
  ~Engine() { engine->stop(false); }

  void start() {
    app::DurableEngineOptions o;
    o.fencing = leadership::FencingToken{db.epoch};
    o.projection_gather = 10ms;
    o.on_fenced = [this] { ++fenced; };
    o.lease_valid = [this] { return lease.load(); };
    o.reads_on_lease = reads_on_lease;
    o.projector_delay = projector_delay;
    engine = std::make_unique<app::DurableEngine>(o, store, metrics, stop);
    engine->load();
    engine->start();
  }
  // Forced: the projector does not catch up first (a crash, as far as the store can tell).
  void restart(bool forced = false) {
    engine->stop(forced);
    engine.reset();
    start();
  }
  app::Pending::Ended submit(const std::string& xml) {
    const protocol::Command cmd = protocol::parse(xml, protocol::ParseLimits{});
    return engine->submit(cmd, xml, [](const protocol::Result& r) { return protocol::render(r); })
        .wait();
  }
  std::string durable(const std::string& xml) {
    auto ended = submit(xml);
    REQUIRE(ended.outcome == Outcome::Durable);
    return ended.prepared;
  }
  // The engine serves again after a failed commit (its reload runs on the commit thread).
  void wait_available() {
    for (int i = 0; i < 2000 && !engine->available(); ++i) std::this_thread::sleep_for(1ms);
    REQUIRE(engine->available());
  }
};

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("durable engine: a result is shown once its journal entry is stored") {
  Engine e;
  const std::string created = e.durable(kCreate);
  CHECK(has(created, "<created id=\"1\"/>"));
  {
    std::lock_guard<std::mutex> lock(e.db.mutex);
    REQUIRE(e.db.journal.size() == 1);
    CHECK(e.db.journal.begin()->second.request == kCreate);
  }
  CHECK(has(e.durable(kBuy), "<opened sym=\"X\" amount=\"10\" limit=\"3\" id=\"1\"/>"));
  // A read changes nothing: no journal entry.
  e.durable(kQuery1);
  std::lock_guard<std::mutex> lock(e.db.mutex);
  CHECK(e.db.journal.size() == 2);
}

TEST_CASE(
    "durable engine: a failed commit fails the request, and the state is reloaded "
    "without it") {
  Engine e;
  e.durable(kCreate);
  {
    std::lock_guard<std::mutex> lock(e.db.mutex);
    e.db.fail_journal_writes = 1;
  }
  CHECK(e.submit(kBuy).outcome == Outcome::NotApplied);
  e.wait_available();
  // The order was never stored, so the next one gets its id, and it rests alone.
  CHECK(has(e.durable(kBuy), "id=\"1\"/>"));
  CHECK(has(e.durable(kQuery1), "<open shares=\"10\"/>"));
  CHECK(e.engine->summary().find("1 state reloads") != std::string::npos);
}

TEST_CASE(
    "durable engine: a commit whose answer was lost is unknown, and the reload keeps "
    "what was stored") {
  Engine e;
  e.durable(kCreate);
  {
    std::lock_guard<std::mutex> lock(e.db.mutex);
    e.db.unknown_journal_writes = 1;
  }
  CHECK(e.submit(kBuy).outcome == Outcome::Unknown);
  e.wait_available();
  // It was stored after all: order 1 exists, and the next order is 2.
  CHECK(has(e.durable(kQuery1), "<open shares=\"10\"/>"));
  CHECK(has(e.durable(kBuy), "id=\"2\"/>"));
}

TEST_CASE("durable engine: a restart rebuilds the state from the projection and the journal") {
  Engine e;
  e.durable(kCreate);
  e.durable(kBuy);
  e.durable(kSell);  // fills 4 of order 1 at 3
  e.restart();
  {
    // The projection caught up with the journal on the way out.
    std::lock_guard<std::mutex> lock(e.db.mutex);
    CHECK(e.db.position == 3);
    CHECK(e.db.journal.rbegin()->first == 3);
  }
  const std::string q = e.durable(kQuery1);
  CHECK(has(q, "<open shares=\"6\"/>"));
  CHECK(has(q, "<executed shares=\"4\" price=\"3\""));
  // Ids continue after the stored ones.
  CHECK(has(e.durable(kBuy), "id=\"3\"/>"));
}

TEST_CASE("durable engine: once another writer took over, nothing is written or served") {
  Engine e;
  e.durable(kCreate);
  e.db.bump_epoch();
  CHECK(e.submit(kBuy).outcome == Outcome::Fenced);
  CHECK(e.fenced == 1);
  CHECK(e.engine->fenced());
  CHECK(e.submit(kQuery1).outcome == Outcome::Fenced);
  std::lock_guard<std::mutex> lock(e.db.mutex);
  CHECK(e.db.journal.size() == 1);
}

// Issue 47: on 6f484b8 a read was answered from memory once the lease looked valid, so a server
// paused past its lease could answer one stale after another had taken over and acknowledged
// more. Now a read waits for a commit that starts after it; a takeover fences that commit.
TEST_CASE("durable engine: a read is answered only after a commit that starts after it") {
  Engine e;
  e.durable(kCreate);
  e.durable(kBuy);
  const auto batches = [&] {
    std::lock_guard<std::mutex> lock(e.db.mutex);
    return e.db.journal_batches;
  };
  const std::uint64_t before = batches();
  CHECK(has(e.durable(kQuery1), "<open shares=\"10\"/>"));
  CHECK(batches() == before + 1);  // its proof: a batch with no entry
  {
    std::lock_guard<std::mutex> lock(e.db.mutex);
    CHECK(e.db.journal.size() == 2);  // nothing journaled for it
  }
  // Another server takes over; this one has not heard of it yet (its lease looks valid).
  e.db.bump_epoch();
  SECTION("a query") { CHECK(e.submit(kQuery1).outcome == Outcome::Fenced); }
  SECTION("a request that changes nothing: a refusal read from the state") {
    CHECK(e.submit(R"(<transactions id="1"><order sym="X" amount="1000" limit="3"/>)"
                   R"(</transactions>)")
              .outcome == Outcome::Fenced);
  }
  CHECK(e.fenced == 1);
}

TEST_CASE("durable engine: with --reads-on-lease a read needs no commit") {
  Engine e;
  e.reads_on_lease = true;
  e.restart();
  e.durable(kCreate);
  const auto batches = [&] {
    std::lock_guard<std::mutex> lock(e.db.mutex);
    return e.db.journal_batches;
  };
  const std::uint64_t before = batches();
  e.durable(kQuery1);
  CHECK(batches() == before);
}

TEST_CASE("durable engine: a failed proof answers the read unavailable, nothing reloaded") {
  Engine e;
  e.durable(kCreate);
  e.durable(kBuy);
  const auto fail_writes = [&](int n) {
    std::lock_guard<std::mutex> lock(e.db.mutex);
    e.db.fail_journal_writes = n;
  };
  // Every write fails while the query waits: whether it asks before its proof failed or after
  // (then the next commit, forced, is its proof), it is not answered.
  fail_writes(1000);
  CHECK(e.submit(kQuery1).outcome == Outcome::Unavailable);
  CHECK(e.engine->available());
  fail_writes(0);
  CHECK(has(e.durable(kQuery1), "<open shares=\"10\"/>"));
  CHECK(e.engine->summary().find("0 state reloads") != std::string::npos);
}

TEST_CASE("durable engine: while the lease is not valid every request is unavailable") {
  Engine e;
  e.durable(kCreate);
  e.lease = false;
  CHECK(e.submit(kBuy).outcome == Outcome::Unavailable);
  CHECK(e.submit(kQuery1).outcome == Outcome::Unavailable);
  e.lease = true;
  e.durable(kBuy);
  std::lock_guard<std::mutex> lock(e.db.mutex);
  CHECK(e.db.journal.size() == 2);
}

TEST_CASE("durable engine: a restart replays the journal after the projection's position") {
  Engine e;
  e.projector_delay = std::chrono::hours(1);
  e.restart();  // the projection now stays at seq 0
  e.durable(kCreate);
  e.durable(kBuy);
  e.durable(kSell);
  e.projector_delay = 0ms;
  {
    std::lock_guard<std::mutex> lock(e.db.mutex);
    e.db.fail_projection_writes = 1000;  // the database went away as the process stopped
  }
  e.restart(true);
  {
    std::lock_guard<std::mutex> lock(e.db.mutex);
    CHECK(e.db.journal.size() == 3);
    CHECK(e.db.position == 0);  // replayed, then: nothing came from the projection
    e.db.fail_projection_writes = 0;
  }
  const std::string q = e.durable(kQuery1);
  CHECK(has(q, "<open shares=\"6\"/>"));
  CHECK(has(q, "<executed shares=\"4\" price=\"3\""));
  CHECK(has(e.durable(kBuy), "id=\"3\"/>"));
  // The replay's effects reach the tables.
  for (int i = 0; i < 5000; ++i) {
    {
      std::lock_guard<std::mutex> lock(e.db.mutex);
      if (e.db.position >= 3) break;
    }
    std::this_thread::sleep_for(1ms);
  }
  std::lock_guard<std::mutex> lock(e.db.mutex);
  CHECK(e.db.position >= 3);
  CHECK(e.db.projection.orders.count(1) == 1);
}

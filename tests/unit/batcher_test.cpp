// store::Batcher, the group commit, on its own: the write function here records batches (it is
// the batcher's input, not a database stand-in; the SQL it feeds is tested end to end).
//   - requests that arrive while a batch is being written share the next write, in seq order;
//   - a reply waits for its batch's write, and comes at once for a ticket already durable;
//   - a failed write fails its batch and the one that filled behind it, and recover() runs;
//   - a fenced write fails everything from then on, never writing again;
//   - a committed batch's effects are handed on, unmerged and through its last seq, before
//     its replies.
#include "store/batcher.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "leadership/fencing.hpp"

namespace {

store::JournalEntry entry(const std::string& text) {
  store::JournalEntry e;
  e.request = text;
  return e;
}

// A write that blocks until released, so a test can fill the next batch meanwhile.
struct GatedWrites {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<std::vector<std::int64_t>> written;  // each batch's journal seqs
  int entered = 0, released = 0;
  bool fail_next = false, fence_next = false;

  void write(const store::JournalBatch& batch) {
    std::unique_lock<std::mutex> lock(mutex);
    const int me = ++entered;
    changed.notify_all();
    changed.wait(lock, [&] { return released >= me; });
    if (fence_next) throw leadership::Fenced("another server took over");
    if (fail_next) {
      fail_next = false;
      throw std::runtime_error("the write failed");
    }
    std::vector<std::int64_t> seqs;
    for (const auto& e : batch.entries) seqs.push_back(e.seq);
    written.push_back(seqs);
  }
  void wait_entered(int n) {
    std::unique_lock<std::mutex> lock(mutex);
    REQUIRE(changed.wait_for(lock, std::chrono::seconds(5), [&] { return entered >= n; }));
  }
  void release() {
    std::lock_guard<std::mutex> lock(mutex);
    ++released;
    changed.notify_all();
  }
};

// The outcome a ticket's callback got, waited for.
std::future<store::CommitResult> outcome_of(store::Batcher& b, store::Ticket t) {
  auto promise = std::make_shared<std::promise<store::CommitResult>>();
  auto future = promise->get_future();
  b.when_durable(t, [promise](store::CommitResult o) { promise->set_value(o); });
  return future;
}

bool ready(std::future<store::CommitResult>& f) {
  return f.wait_for(std::chrono::milliseconds(0)) == std::future_status::ready;
}

}  // namespace

TEST_CASE("Requests that arrive during a write share the next one, in seq order",
          "[unit][batcher]") {
  GatedWrites writes;
  store::Batcher batcher([&](const store::JournalBatch& b, store::Ticket) { writes.write(b); },
                         [](store::Batcher&, store::Ticket, store::CommitResult) {});
  batcher.start();
  const auto first = batcher.submit(entry("a"), {});
  writes.wait_entered(1);  // batch 1 (a) is being written
  const auto second = batcher.submit(entry("b"), {});
  const auto third = batcher.submit(entry("c"), {});
  CHECK(second.ticket == third.ticket);
  CHECK(second.ticket != first.ticket);
  auto a = outcome_of(batcher, first.ticket);
  auto c = outcome_of(batcher, third.ticket);
  CHECK_FALSE(ready(a));  // not durable before its write returns
  writes.release();
  CHECK(a.get() == store::CommitResult::Committed);
  writes.wait_entered(2);
  CHECK_FALSE(ready(c));
  writes.release();
  CHECK(c.get() == store::CommitResult::Committed);
  CHECK(writes.written ==
        std::vector<std::vector<std::int64_t>>{{first.seq}, {second.seq, third.seq}});
  CHECK(third.seq == second.seq + 1);
  // A ticket already durable is answered at once, on the caller's thread.
  auto again = outcome_of(batcher, first.ticket);
  CHECK(ready(again));
  CHECK(batcher.committed_through() == third.ticket);
  batcher.stop();
}

TEST_CASE("A failed write fails its batch and the one behind it, and recover runs",
          "[unit][batcher]") {
  GatedWrites writes;
  std::atomic<int> recovered{0};
  store::CommitResult recovered_with = store::CommitResult::Committed;
  store::Batcher batcher([&](const store::JournalBatch& b, store::Ticket) { writes.write(b); },
                         [&](store::Batcher& b, store::Ticket failed, store::CommitResult outcome) {
                           // Counted before the replies: the test reads it once they arrive.
                           recovered_with = outcome;
                           ++recovered;
                           for (auto& reply : b.fail_open_batch(failed, outcome)) reply();
                         });
  batcher.start();
  writes.fail_next = true;
  const auto first = batcher.submit(entry("a"), {});
  auto a = outcome_of(batcher, first.ticket);
  writes.wait_entered(1);
  const auto behind = batcher.submit(entry("b"), {});  // saw a's state
  auto b = outcome_of(batcher, behind.ticket);
  writes.release();
  CHECK(a.get() == store::CommitResult::NotApplied);
  CHECK(b.get() == store::CommitResult::NotApplied);
  CHECK(recovered == 1);
  CHECK(recovered_with == store::CommitResult::NotApplied);
  CHECK(writes.written.empty());
  // The next request commits normally.
  const auto next = batcher.submit(entry("c"), {});
  auto c = outcome_of(batcher, next.ticket);
  writes.wait_entered(2);
  writes.release();
  CHECK(c.get() == store::CommitResult::Committed);
  batcher.stop();
}

TEST_CASE("After a failed write and the reload, a read's ticket is durable at once",
          "[unit][batcher]") {
  GatedWrites writes;
  store::Batcher batcher([&](const store::JournalBatch& b, store::Ticket) { writes.write(b); },
                         [&](store::Batcher& b, store::Ticket failed, store::CommitResult outcome) {
                           for (auto& reply : b.fail_open_batch(failed, outcome)) reply();
                         });
  batcher.start();
  const auto ok = batcher.submit(entry("a"), {});
  auto a = outcome_of(batcher, ok.ticket);
  writes.wait_entered(1);
  writes.release();
  REQUIRE(a.get() == store::CommitResult::Committed);
  writes.fail_next = true;
  const auto lost = batcher.submit(entry("b"), {});
  auto b = outcome_of(batcher, lost.ticket);
  writes.wait_entered(2);
  writes.release();
  REQUIRE(b.get() == store::CommitResult::NotApplied);
  // The engine now holds what is durable only: a read sees nothing of the failed batches (a
  // read-mostly server once answered every read "not applied" until the next write).
  auto read = outcome_of(batcher, batcher.visible_ticket());
  REQUIRE(ready(read));
  CHECK(read.get() == store::CommitResult::Committed);
  batcher.stop();
}

TEST_CASE("After a fenced write nothing is written again", "[unit][batcher]") {
  GatedWrites writes;
  store::Batcher batcher([&](const store::JournalBatch& b, store::Ticket) { writes.write(b); },
                         [&](store::Batcher& b, store::Ticket failed, store::CommitResult outcome) {
                           for (auto& reply : b.fail_open_batch(failed, outcome)) reply();
                         });
  batcher.start();
  writes.fence_next = true;
  auto a = outcome_of(batcher, batcher.submit(entry("a"), {}).ticket);
  writes.wait_entered(1);
  writes.release();
  CHECK(a.get() == store::CommitResult::Fenced);
  CHECK_THAT(batcher.fenced_why(), Catch::Contains("another server"));
  auto later = outcome_of(batcher, batcher.submit(entry("b"), {}).ticket);
  CHECK(later.get() == store::CommitResult::Fenced);
  std::lock_guard<std::mutex> lock(writes.mutex);
  CHECK(writes.entered == 1);  // the later batch never reached the write function
  batcher.stop();
}

// Issue 47: a read proves its answer with a commit that starts after it (ReadIndex).
TEST_CASE("A read's proof is a write that starts after it, even with nothing to write",
          "[unit][batcher]") {
  GatedWrites writes;
  std::atomic<int> recovered{0};
  store::Batcher batcher([&](const store::JournalBatch& b, store::Ticket) { writes.write(b); },
                         [&](store::Batcher& b, store::Ticket failed, store::CommitResult o) {
                           ++recovered;
                           for (auto& reply : b.fail_open_batch(failed, o)) reply();
                         });
  batcher.start();
  // Idle: the proof is written at once, with no entry, and its waiter released after.
  auto proof = outcome_of(batcher, batcher.proof_ticket());
  writes.wait_entered(1);
  CHECK_FALSE(ready(proof));
  writes.release();
  CHECK(proof.get() == store::CommitResult::Committed);
  // During a write: the proof is the batch after it, never the one already being written.
  const auto a = batcher.submit(entry("a"), {});
  writes.wait_entered(2);
  const store::Ticket during = batcher.proof_ticket();
  CHECK(during == a.ticket + 1);
  auto waiting = outcome_of(batcher, during);
  writes.release();
  writes.wait_entered(3);
  CHECK_FALSE(ready(waiting));
  writes.release();
  CHECK(waiting.get() == store::CommitResult::Committed);
  CHECK(writes.written == std::vector<std::vector<std::int64_t>>{{}, {a.seq}, {}});
  CHECK(batcher.stats().proofs == 2);
  // A proof that fails fails its waiters alone: nothing to rebuild.
  writes.fail_next = true;
  const store::Ticket failed_ticket = batcher.proof_ticket();
  auto failed = outcome_of(batcher, failed_ticket);
  writes.wait_entered(4);
  writes.release();
  CHECK(failed.get() == store::CommitResult::NotApplied);
  CHECK(recovered == 0);
  // A read that asks about it only now (after an archive lookup) is not told "committed": it
  // waits for the next commit, which starts after it too, and one is written for it.
  auto late = outcome_of(batcher, failed_ticket);
  writes.wait_entered(5);
  CHECK_FALSE(ready(late));
  writes.release();
  CHECK(late.get() == store::CommitResult::Committed);
  auto next = outcome_of(batcher, batcher.submit(entry("b"), {}).ticket);
  writes.wait_entered(6);
  writes.release();
  CHECK(next.get() == store::CommitResult::Committed);
  // A fenced proof is a fence like any write's.
  writes.fence_next = true;
  auto fenced = outcome_of(batcher, batcher.proof_ticket());
  writes.wait_entered(7);
  writes.release();
  CHECK(fenced.get() == store::CommitResult::Fenced);
  CHECK(recovered == 1);
  batcher.stop();
}

TEST_CASE("A committed batch hands its effects on through its last seq, before its replies",
          "[unit][batcher]") {
  GatedWrites writes;
  struct Handed {
    std::size_t requests, rows;
    std::int64_t through_seq;
    bool replied;  // whether the batch's reply had come when its effects were handed on
  };
  std::vector<Handed> handed;  // the writer thread's until the replies arrive
  std::atomic<bool> replied{false};
  store::Batcher batcher(
      [&](const store::JournalBatch& b, store::Ticket) { writes.write(b); },
      [](store::Batcher&, store::Ticket, store::CommitResult) {},
      [&](store::DeferredEffects&& effects, std::int64_t through_seq) {
        const std::size_t rows = effects.rows();
        handed.push_back({effects.take().size(), rows, through_seq, replied.load()});
      });
  batcher.start();
  market::Effects one;
  one.symbols = {"X"};
  const auto first = batcher.submit(entry("a"), std::move(one));
  writes.wait_entered(1);
  market::Effects two;
  two.symbols = {"Y"};
  two.accounts = {{"1", {}, {}}, {"1", {}, {}}};  // rows as produced: both count
  batcher.submit(entry("b"), std::move(two));
  const auto third = batcher.submit(entry("c"), {});
  auto promise = std::make_shared<std::promise<store::CommitResult>>();
  auto last = promise->get_future();
  batcher.when_durable(third.ticket, [&, promise](store::CommitResult o) {
    replied = true;
    promise->set_value(o);
  });
  writes.release();
  writes.wait_entered(2);
  writes.release();
  CHECK(last.get() == store::CommitResult::Committed);
  REQUIRE(handed.size() == 2);
  CHECK(handed[0].requests == 1);
  CHECK(handed[0].rows == 1);
  CHECK(handed[0].through_seq == first.seq);
  CHECK(handed[1].requests == 2);
  CHECK(handed[1].rows == 3);
  CHECK(handed[1].through_seq == third.seq);
  CHECK_FALSE(handed[1].replied);
  batcher.stop();
}

TEST_CASE("Under load a small batch is left to fill to the last one's size", "[unit][batcher]") {
  // A long wait, so that the test's own pauses are short beside it on any machine: it asserts
  // which requests share a batch, never how long anything took.
  GatedWrites writes;
  store::Batcher batcher([&](const store::JournalBatch& b, store::Ticket) { writes.write(b); },
                         [](store::Batcher&, store::Ticket, store::CommitResult) {});
  batcher.gather({std::chrono::seconds(1), 8});
  batcher.start();
  const auto a = batcher.submit(entry("a"), {});
  writes.wait_entered(1);  // [a]: nothing before it, so no wait
  const auto b = batcher.submit(entry("b"), {});
  const auto c = batcher.submit(entry("c"), {});
  writes.release();
  writes.wait_entered(2);  // [b, c]: after a batch of one, no wait
  const auto d = batcher.submit(entry("d"), {});
  writes.release();
  // After a batch of two the writer lets [d] fill to two: e, a tenth of a second later, joins
  // it and ends the wait (without the gathering d would have been written alone).
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const auto e = batcher.submit(entry("e"), {});
  writes.wait_entered(3);
  const auto f = batcher.submit(entry("f"), {});
  writes.release();
  writes.wait_entered(4);  // [f]: waited for a second request, which did not come
  writes.release();
  auto done = outcome_of(batcher, f.ticket);
  CHECK(done.get() == store::CommitResult::Committed);
  CHECK(writes.written ==
        std::vector<std::vector<std::int64_t>>{{a.seq}, {b.seq, c.seq}, {d.seq, e.seq}, {f.seq}});
  batcher.stop();
}

TEST_CASE("CommitGather waits for as many as the last batch had, up to its target",
          "[unit][batcher]") {
  const store::CommitGather gather{std::chrono::microseconds(300), 32};
  CHECK(gather.fill_to(10, 16) == 16);
  CHECK(gather.fill_to(16, 16) == 0);   // as large already
  CHECK(gather.fill_to(10, 64) == 32);  // never more than the target
  CHECK(gather.fill_to(40, 64) == 0);
  CHECK(gather.fill_to(1, 1) == 0);                   // an idle server's batches of one
  CHECK(store::CommitGather{}.fill_to(1, 100) == 0);  // off
}

#include "app/replay.hpp"

#include <chrono>
#include <future>
#include <limits>
#include <stdexcept>
#include <string>

#include "app/apply.hpp"
#include "protocol/parse.hpp"
#include "protocol/reject_text.hpp"
#include "util/log.hpp"

namespace app {
namespace {

[[noreturn]] void diverged(const store::JournalEntry& entry, const std::string& why) {
  throw std::runtime_error("journal replay diverged at seq " + std::to_string(entry.seq) + ": " +
                           why + " (the journal and the projection do not match this server)");
}

constexpr std::int64_t kReadChunk = 10000;
// The replay waits for the projector beyond this many unprojected rows: bounds memory.
constexpr std::size_t kMaxPendingDuringReplay = store::Projector::kWarnPendingRows;

}  // namespace

protocol::Result replay_entry(const store::JournalEntry& entry, market::Engine& engine,
                              market::Effects& fx) {
  if (engine.next_order_id() != entry.first_order_id)
    diverged(entry, "next order id is " + std::to_string(engine.next_order_id()) +
                        ", the live server's was " + std::to_string(entry.first_order_id));
  // The live server refused requests over its parse limits before they were journaled;
  // whatever it accepted must parse again, whatever those flags are now.
  static const protocol::ParseLimits limits = protocol::ParseLimits::unlimited();
  protocol::Command cmd = protocol::parse(entry.request, limits);
  if (cmd.kind == protocol::Command::Kind::Invalid)
    diverged(entry, "the request no longer parses: " + protocol::reject_text(*cmd.error));
  Admission admission = [&] {
    try {
      return Admission::replay(entry.refused);
    } catch (const std::invalid_argument& e) {
      diverged(entry, e.what());
    }
  }();
  Applied applied = apply(cmd, engine, entry.at, fx, admission);
  if (fx.empty()) diverged(entry, "the request changed nothing");
  return std::move(applied.result);
}

Loaded load_state(store::StateReader& db, market::Engine& engine, ClosedOrders& closed,
                  store::Projector& projector) {
  const auto started = std::chrono::steady_clock::now();
  projector.discard_queue();
  closed.clear();
  Loaded out;
  const std::int64_t position = db.load(engine);
  projector.set_projected(position);
  out.last_seq = position;
  const double load_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

  auto last_log = std::chrono::steady_clock::now();
  // The next chunk is read while this one is replayed (only that thread uses `db` meanwhile).
  auto next = std::async(std::launch::async, [&db, after = out.last_seq] {
    return db.read_journal(after, kReadChunk);
  });
  for (;;) {
    auto entries = next.get();
    if (entries.empty()) break;
    next = std::async(std::launch::async, [&db, after = entries.back().seq] {
      return db.read_journal(after, kReadChunk);
    });
    store::ProjectionRows chunk;  // merged here, off the projector's thread
    for (const store::JournalEntry& entry : entries) {
      market::Effects fx;
      replay_entry(entry, engine, fx);
      closed.note(fx, entry.seq);
      chunk.merge(std::move(fx));
    }
    out.last_seq = entries.back().seq;
    out.replayed += static_cast<std::int64_t>(entries.size());
    projector.wait_pending_below(kMaxPendingDuringReplay);
    projector.enqueue(std::move(chunk), out.last_seq);
    closed.forget_projected(engine, projector.projected_seq());
    if (std::chrono::steady_clock::now() - last_log >= std::chrono::seconds(5)) {
      last_log = std::chrono::steady_clock::now();
      EXCHANGE_LOG(info) << "replaying the journal: " << out.replayed << " entries so far (seq "
                         << out.last_seq << ")";
    }
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXCHANGE_LOG(info) << "loaded the projection (journal seq " << position << ") in " << load_seconds
                     << " s; replayed " << out.replayed << " journal entries in "
                     << (out.seconds - load_seconds) << " s (next seq " << out.last_seq + 1 << ", "
                     << engine.order_count() << " orders in memory)";
  return out;
}

}  // namespace app

#pragma once
// Every text the server sends when a request as a whole ends without its result, in one table:
// the app's request handler, the floor's handler and the concurrency models all take their
// error replies from here, so the same condition reads the same whichever code found it. It
// lives in serving/ (header-only, links nothing) because concurrency/ must not reach app/ and
// writes two of them (a handler that threw, no thread to run a request on).
//
// Tests, scripts and docs match some of these texts (by their prefix mostly: "Server busy",
// "Service unavailable", "Internal error"): grep tests/ scripts/ docs/ before changing one.
// Connection-level refusals (too many open connections, buffered bytes over budget) are net/'s
// and stay there: net/ must not reach serving/. What was wrong with a request's content (or one
// of its children) is a market::Reject, worded by the other table, protocol/reject_text.cpp
// (docs/ARCHITECTURE.md, "Rejects", says why there are two).
namespace serving {

// Why a request got no result. Each names one condition and has one text.
enum class ReplyError {
  Unavailable,            // the engine is being rebuilt from the database; nothing applied
  Fenced,                 // another server took over the database; this one stepped down
  Standby,                // this server is the standby (--standby): it serves nothing yet
  NotApplied,             // its commit failed; nothing stored, safe to retry
  Unknown,                // the connection broke during its commit; outcome not known
  InternalError,          // applying it failed inside the engine; nothing kept
  HandlerFailed,          // the handler threw (out of memory, a bug) before answering
  HeavyQueueFull,         // a large request past --max-heavy-bytes-queued
  HeavyWaitedTooLong,     // a large request not started within --max-heavy-wait-ms
  Stopping,               // a large request still waiting when the server stops
  OverMemory,             // a request that could grow the state, over --max-memory-bytes
  NoThreadForRequest,     // per-request: no thread could be started for it
  NoThreadForConnection,  // per-client: no thread could be started for the connection
};

// The protocol text for `error` (rendered as <results><error>TEXT</error></results>).
constexpr const char* error_text(ReplyError error) {
  switch (error) {
    case ReplyError::Unavailable:
      return "Service unavailable: the database cannot be reached; nothing was applied, retry "
             "later";
    case ReplyError::Fenced:
      // Not "retry": this server will not serve again; the one that took over will.
      return "Service unavailable: another exchange server took over this database and this "
             "one has stepped down; nothing was applied. Send requests to the server now in "
             "charge";
    case ReplyError::Standby:
      // Not "retry later" here: the active server serves now; this one only once it has
      // taken over (then the same connection is served).
      return "Service unavailable: this exchange server is the standby and serves nothing "
             "until it takes over; nothing was applied. Send requests to the active server";
    case ReplyError::NotApplied:
      return "Internal error: the request was not applied (the database write failed); it is "
             "safe to retry";
    case ReplyError::Unknown:
      return "Internal error: the database connection broke while this request was being "
             "committed, and the database could not be asked whether it was; query your "
             "orders before retrying";
    case ReplyError::InternalError:
      return "Internal error: the request was not applied; it is safe to retry";
    case ReplyError::HandlerFailed:
      return "Internal error: the request failed; query your orders before retrying";
    case ReplyError::HeavyQueueFull:
      return "Server busy: too many large requests are waiting (--max-heavy-bytes-queued); "
             "nothing was applied, retry later";
    case ReplyError::HeavyWaitedTooLong:
      return "Server busy: a large request waited too long for its turn (--max-heavy-wait-ms; "
             "the projection or the database is behind); nothing was applied, retry later";
    case ReplyError::Stopping:
      return "Service unavailable: the server is stopping; nothing was applied";
    case ReplyError::OverMemory:
      return "Server busy: the server is over its memory budget (--max-memory-bytes); requests "
             "that create accounts, positions or orders are refused until it is below it "
             "(queries and cancels still run); nothing was applied";
    case ReplyError::NoThreadForRequest:
      return "Server busy: no thread for the request; retry later";
    case ReplyError::NoThreadForConnection:
      return "Server busy: no thread for the connection; retry later";
  }
  return "Internal error: the request failed; query your orders before retrying";
}

}  // namespace serving

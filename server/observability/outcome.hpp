#pragma once
// How a request ended: the app's one outcome type. The durable engine ends a request's
// app::Pending with it, the request handler renders the reply from it (error_of,
// app/outcome.hpp, which also maps the group commit's store::CommitResult to it: outcome_of),
// and Metrics derives its Prometheus label from it (Metrics::label_of). A plain enum, here in
// the lowest room that needs it, so that observability knows nothing of the store.

namespace app {

enum class Outcome {
  Durable,        // answered with its result (item errors included): all it reflects is committed
  Rejected,       // refused whole before it ran: malformed, over a parse limit or the memory budget
  Busy,           // a large request refused: the heavy queue was full, or the server stopped
  Unavailable,    // the engine is being rebuilt; nothing was applied
  Fenced,         // another server took over the database; nothing was applied, and this one
                  // serves nothing more
  InternalError,  // applying it failed inside the engine; nothing is kept
  NotApplied,     // its commit failed; nothing is stored, safe to retry
  Unknown,        // the connection broke during its commit and the outcome is not known
};

}  // namespace app

#pragma once
// A standby's way to the writer lock (exchange-server --standby, cli::StandbyRole): queued in
// PostgreSQL behind the holder, so the lock is ours the moment the holder's session ends; the
// holder's lock session ended once its lease has expired by PostgreSQL's clock (a paused
// server); queued again after our own session broke, but not while the holder may still be
// taking the lock back (a database failover must not become an exchange failover too).
#include <functional>

#include "leadership/writer_lock.hpp"
#include "util/stop_flag.hpp"

namespace leadership {

// Returns true once `lock` (queued) is ours, false once `stopped()` says to give up. Retries
// sleep on `sleep_on`, so a stop request ends them at once.
bool wait_for_lock(WriterLock& lock, const std::function<bool()>& stopped,
                   const util::StopFlag& sleep_on);

}  // namespace leadership

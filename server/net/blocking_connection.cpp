#include "net/blocking_connection.hpp"

#include <sys/socket.h>

#include <cstring>

#include "net/blocking_stream.hpp"
#include "net/peer.hpp"
#include "net/session.hpp"
#include "util/log.hpp"

namespace net {
namespace {

using Clock = BlockingStream::Clock;
constexpr Clock::time_point kNoDeadline = BlockingStream::kNoDeadline;

using HandleFn = std::function<std::string(const std::string&, const auth::Caller&)>;

// Carries out the session's actions until it has none; false once it closed. `caller` goes
// with each request, with the principal the session has established by then.
bool run_actions(Session& session, BlockingStream& stream, auth::Caller& caller,
                 Clock::time_point& deadline, const ConnectionLimits& limits,
                 const HandleFn& handle, PendingSlots::Slot& slot) {
  // Authenticated now: the slot leaves the pending list, unless it was taken first.
  if (session.authenticated() && !slot.authenticated()) session.failed();
  Session::Action action;
  while (session.next(action)) {
    switch (action.kind) {
      case Session::Action::Kind::Send:
        switch (stream.write_all(action.data, deadline)) {
          case BlockingStream::Io::Done:
            session.sent();
            break;
          case BlockingStream::Io::Failed:
            session.failed();
            break;
          case BlockingStream::Io::TimedOut:
            session.timed_out();
            break;
        }
        break;
      case Session::Action::Kind::Dispatch:
        caller.principal = session.principal();
        caller.generation = session.generation();
        session.replied(handle(action.data, caller));
        break;
      case Session::Action::Kind::StartDeadline:
        deadline = slot.deadline(Clock::now() + limits.read_timeout);
        break;
      case Session::Action::Kind::StopDeadline:
        deadline = kNoDeadline;
        break;
      case Session::Action::Kind::Close:
        return false;
    }
  }
  return true;
}

}  // namespace

void serve_blocking(int fd, const ConnectionLimits& limits, const HandleFn& handle,
                    PendingSlots::Slot slot) {
  // Wakes whatever this thread waits for (handshake, read, write): it sees the end of the stream.
  slot.on_close([fd] { ::shutdown(fd, SHUT_RDWR); });
  BlockingStream stream(fd, limits.tls.get());
  auth::Peer peer = peer_of(fd, stream.tls());
  if (stream.handshake(slot.deadline(Clock::now() + limits.read_timeout)) !=
      BlockingStream::Io::Done) {
    EXCHANGE_LOG(debug) << "connection " << peer.address << ": no TLS handshake; closed";
    return;
  }
  auth::Caller caller{{}, peer.address};
  Session session(limits, std::move(peer));
  Clock::time_point deadline = kNoDeadline;
  char buf[16384];
  session.started(stream.certificate_name());
  while (run_actions(session, stream, caller, deadline, limits, handle, slot)) {
    // The session has no action left, so it waits for bytes: this driver never leaves a reply
    // or a write pending. Anything else would be a session bug; closing beats hanging.
    if (!session.wants_read()) {
      session.failed();
      continue;
    }
    if (Clock::now() >= deadline) {
      session.timed_out();
      continue;
    }
    if (!stream.wait_readable(deadline)) continue;  // timeout or EINTR: checked above
    std::size_t n = 0;
    switch (stream.read(buf, sizeof buf, n)) {
      case BlockingStream::Read::Data:
        session.received(buf, n);
        if (session.took_logon()) std::memset(buf, 0, sizeof buf);  // it held a key
        break;
      case BlockingStream::Read::Eof:
        session.peer_closed();
        break;
      case BlockingStream::Read::Failed:
        session.failed();
        break;
      case BlockingStream::Read::Again:
        break;
    }
  }
  stream.close_notify();  // after a reset it simply fails
  discard_pending_input(fd);
}

}  // namespace net

#pragma once
// The rules every driver of net::Session relies on (net/session.hpp), checked on what a session
// asks for: one Send at a time, never empty, every write bounded by a deadline from its start;
// one Dispatch at a time, none over the request size limit, none before the connection is
// authenticated; nothing after Close; once closed, no reading and nothing charged to the buffer
// budget; once authenticated, authenticated for good. The unit test
// (tests/unit/session_test.cpp) and the fuzzer (tests/fuzz/fuzz_session.cpp) drive sessions
// through it; it names the rule broken and each fails its own way (Catch, abort). Header-only
// and Catch-free, for the fuzzer's build.
#include <cstddef>

#include "net/session.hpp"

namespace testing_support {

struct SessionRules {
  explicit SessionRules(std::size_t max_request_bytes) : max_request_bytes(max_request_bytes) {}

  // One action the session asked for: the rule it breaks, or nullptr.
  const char* take(const net::Session::Action& a) {
    using Kind = net::Session::Action::Kind;
    if (closed) return "an action after Close (Close is the last)";
    switch (a.kind) {
      case Kind::Send:
        if (sending) return "a Send while the last one is still being written";
        if (!deadline) return "a Send without a deadline (a blocking driver writes right here)";
        if (a.data.empty()) return "an empty Send";
        sending = true;
        break;
      case Kind::Dispatch:
        if (dispatched) return "a Dispatch while the last one is unanswered";
        if (a.data.size() > max_request_bytes) return "a Dispatch over the request size limit";
        dispatched = true;
        break;
      case Kind::StartDeadline:
        deadline = true;
        break;
      case Kind::StopDeadline:
        deadline = false;
        break;
      case Kind::Close:
        closed = true;
        deadline = false;
        break;
    }
    return nullptr;
  }

  // Once the session has no more actions for now: the rule its state breaks, or nullptr.
  const char* settled(const net::Session& session) {
    if (closed && session.wants_read()) return "it wants to read after Close";
    if (closed && !session.closed()) return "it sent Close but does not say it is closed";
    if (closed && session.charged() != 0) return "it holds budget after Close";
    if (dispatched && !closed && !session.authenticated())
      return "a Dispatch on a connection not authenticated (its slot could be taken meanwhile)";
    if (was_authenticated && !session.authenticated()) return "it was authenticated, then not";
    was_authenticated = session.authenticated();
    return nullptr;
  }

  // The driver's side: the Send in flight was written, the Dispatch answered.
  void sent() { sending = false; }
  void answered() { dispatched = false; }

  std::size_t max_request_bytes;
  bool sending = false;            // a Send is being written
  bool dispatched = false;         // a Dispatch awaits its reply
  bool deadline = false;           // a deadline runs
  bool closed = false;             // Close was taken
  bool was_authenticated = false;  // at the last settled()
};

}  // namespace testing_support

// What goes wrong talking to a server, by what it means for the request: never sent (safe to
// send elsewhere), or sent without a reply (outcome unknown).
#pragma once

#include <stdexcept>

namespace exch::net {

// Any failure to talk to a server: refused, timeout, reset, early EOF, bad framing.
class NetError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The request never left whole (no connection, no session, or a failed write): no server can
// have applied it, so it may be sent to another.
class NotSent : public NetError {
 public:
  using NetError::NetError;
};

// The server refused the key logon ("EXCHANGE-LOGON 1 REFUSED why"): nothing was applied.
// The message is "logon refused: why".
class LogonRefused : public NotSent {
 public:
  using NotSent::NotSent;
};

// The request was sent whole and no whole reply came back (reset, early close, timeout): it
// may or may not have been applied. Never resend it blindly; query first.
class NoReply : public NetError {
 public:
  using NetError::NetError;
};

// The server answered the session hello with something else (an old server).
class SessionUnsupported : public NetError {
 public:
  using NetError::NetError;
};

}  // namespace exch::net

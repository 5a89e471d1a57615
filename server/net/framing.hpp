#pragma once
// The wire format of PROTOCOL.md section 2: a line with the payload's length in bytes, then
// the payload. Also the opt-in persistent session: a connection whose first line is
// wire::kSessionHello (common/wire/session_hello.hpp) gets wire::kSessionAccept back, and from
// then on every reply is framed like a request (length line, then the XML) and the connection
// stays open for more requests. Before both, a key logon (wire::kLogon, NAME and KEY) may come
// as the very first line.
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "auth/gate.hpp"
#include "net/buffer_budget.hpp"
#include "protocol/reply_bound.hpp"
#include "wire/session_hello.hpp"

namespace net {

class TlsContext;

struct ConnectionLimits {
  std::size_t max_request_bytes = 1 << 20;
  // How long a client may take to send one whole request, counted from when the server starts
  // waiting for it (connection accepted, or previous reply written): a deadline, not an idle
  // timeout, so a client trickling a byte at a time cannot hold the connection for ever.
  std::chrono::milliseconds read_timeout{30000};
  // Open connections beyond this are accepted, told "Server busy" and closed at once, so a
  // flood of connections cannot exhaust descriptors (or, per client, threads); but while any
  // open connection is pending (not yet authenticated), the oldest of them is closed instead
  // (pending_slots.hpp).
  std::size_t max_connections = 4096;
  // Of those, how many may be pending at once; beyond it the oldest pending one is closed.
  std::size_t max_pending_connections = 1024;
  // A pending connection's TLS handshake, logon and (without --principals) first request must
  // all be done this long after its accept, whatever read_timeout would allow.
  std::chrono::milliseconds logon_timeout{10000};
  // A session framing no further request while this many bytes of replies are unwritten: a
  // client that never reads holds at most this much (plus one reply), then its write deadline
  // closes it.
  std::size_t max_unsent_bytes = 256 * 1024;
  // What every connection together may buffer (--max-buffered-bytes), shared by all of them;
  // null: no bound across connections (each still has the bounds above). What a session
  // charges and how it keeps to it: session.hpp.
  std::shared_ptr<BufferBudget> budget;
  // Input a connection may hold without asking the budget: one read of either driver (16 KiB),
  // so a client sending ordinary requests, even pipelined, is never refused for the budget.
  std::size_t unbudgeted_input_bytes = 16 * 1024;
  // While the budget is exhausted only requests up to this size are taken: their replies are
  // small (64 KiB at most with the default --max-reply-ratio), so a small client is still
  // served, while a connection arriving then cannot add a large reply on top.
  std::size_t small_request_bytes = 1024;
  // The largest reply a request may get (--max-reply-ratio, --max-reply-bytes): reserved in
  // the budget while the request runs, so a request is taken only while its reply fits. All
  // zero (the floor, tests): nothing reserved.
  protocol::ReplyBound reply_bound;
  // Set (--principals): a request is served only once the connection has a principal, by a
  // verified client certificate or a key logon; null: no authentication.
  std::shared_ptr<auth::Gate> auth;
  // Set (--tls-cert, --tls-key): the port speaks TLS; null: plaintext.
  std::shared_ptr<TlsContext> tls;
};

// The reply to a connection refused because `limit` connections are already open.
std::string server_busy_reply(std::size_t limit);

// Incremental: feed it whatever arrived, then take events until it needs more.
class FrameReader {
 public:
  // Logon: the first line starts with "EXCHANGE-LOGON"; `out` is the rest of it (" 1 NAME KEY"
  // when well-formed; the session checks it).
  enum class Event { NeedMore, Request, SessionHello, Logon, Error };

  explicit FrameReader(std::size_t max_request_bytes) : max_bytes_(max_request_bytes) {}

  void feed(const char* data, std::size_t size);
  // Request: `out` is the payload. Error: `out` says why; the connection must close.
  Event next(std::string& out);
  // True when part of a request has arrived (an EOF or timeout now cuts a request short).
  bool mid_request() const { return pos_ < buf_.size() || expected_ != kNone; }
  // Bytes held: what was fed and not yet framed, plus at most the request framed last (kept
  // until the next feed or until nothing else is left).
  std::size_t buffered() const { return buf_.size(); }
  // Bytes fed but not yet framed.
  std::size_t unframed() const { return buf_.size() - pos_; }
  // Every byte held now, framed or not (for tests: a logon's key is never among them).
  std::string_view held() const { return buf_; }
  // Forgets everything buffered (the connection is being closed) and frees its memory.
  void discard();

 private:
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  // Empties buf_; a large buffer (from a large request) is freed rather than kept for life.
  void clear_buffer();
  std::size_t max_bytes_;
  std::string buf_;
  std::size_t pos_ = 0;
  // Reads the next line (Error: `out` says why; NeedMore: no whole line yet).
  Event take_line(std::string_view& line, std::string& out);
  // Which opening lines may still come: the logon first, the hello first or after the logon.
  enum class Opening { LogonOrHello, Hello, Done };
  std::size_t expected_ = kNone;  // payload length once the length line is read
  Opening opening_ = Opening::LogonOrHello;
};

// The bytes to send for a reply document.
std::string frame_reply(std::string xml, bool persistent);
// A <results><error>WHY</error></results> reply for framing problems.
std::string framing_error_reply(const std::string& why);

}  // namespace net

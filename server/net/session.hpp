#pragma once
// The life of one client connection as a state machine with no I/O inside (sans-I/O, like
// FrameReader): the driver feeds it what happened on the socket and takes back what to do.
// Both drivers, the event-loop one (AsyncConnection) and the thread-per-connection one
// (serve_blocking), run this same machine, so the session hello, framing errors, deadlines,
// early closes and their error texts exist once, and the fuzzer (tests/fuzz/fuzz_session.cpp)
// can drive every interleaving of bytes and socket events without a socket.
//
// The rules it enforces:
//   - One request at a time per connection: the next is not framed before the reply to the
//     previous one is queued, so replies keep the requests' order.
//   - Backpressure: no more requests are framed (and the driver stops reading) while more than
//     limits.max_unsent_bytes of replies wait to be written, so a client that sends requests
//     and never reads its replies holds at most that much (plus one reply) and is closed when
//     the write deadline passes.
//   - Deadlines: one while the server waits for a request (read_timeout: the whole request,
//     however slowly it trickles in), one for each write (a peer that does not read), none
//     while a request is with the handler.
//   - Only one Send is with the driver at a time; Close is the last action ever emitted.
//   - The budget across connections (limits.budget, --max-buffered-bytes): the session charges
//     to it every byte it holds (input not yet framed, the request with the handler, replies
//     not yet written) and gives all of it back when it closes, however it closes (the
//     destructor too). Input beyond limits.unbudgeted_input_bytes is taken only if the budget
//     has room for it; otherwise the client gets kBuffersFull and the connection closes, with
//     nothing dispatched. Replies are always queued (one may already be journaled), but while
//     the budget is exhausted a connection that still has replies unwritten frames nothing
//     more and stops reading, so the clients that do not read are the ones that stall, and
//     their write deadline closes them; readers go on. A request larger than
//     limits.small_request_bytes is taken only if the budget also has room for the largest
//     reply it may get (limits.reply_bound), reserved until the reply replaces it; otherwise
//     kBuffersFull. So many connections cannot each add a large reply past the budget, while
//     small requests (small replies) are always served.
//   - Authentication (limits.auth): a key logon line is answered before anything else, a refused
//     one closes the connection; a request on a connection without a principal (no verified
//     certificate of a listed name, no logon) gets one error and the connection closes, with
//     nothing dispatched. What a principal may do is the handler's to decide, per request.
#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <utility>

#include "net/framing.hpp"

namespace net {

class Session {
 public:
  struct Action {
    enum class Kind {
      Send,           // write `data` in full, then call sent() (or failed())
      Dispatch,       // run the request `data`; call replied() with its reply document
      StartDeadline,  // (re)start the deadline: limits.read_timeout from now
      StopDeadline,   // no deadline until the next StartDeadline
      Close,          // close the socket; nothing follows
    };
    Kind kind;
    std::string data;
  };

  // `peer`: who connected (for the logon rules and log lines).
  explicit Session(const ConnectionLimits& limits, auth::Peer peer = {});
  ~Session();  // gives back whatever is still charged to the budget
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // ---- events, from the driver ----
  // The connection was accepted (and its TLS handshake done): `certificate_name` is the verified
  // client certificate's name, empty without one.
  void started(std::string certificate_name = {});
  void received(const char* data, std::size_t size);  // bytes arrived
  void peer_closed();             // EOF: the peer will send nothing more (it may still read)
  void failed();                  // reset or any socket error: nothing more can be sent
  void timed_out();               // the deadline of the last StartDeadline passed
  void sent();                    // the last Send was written in full
  void replied(std::string xml);  // the reply to the last Dispatch (ignored once closed)
  void shutdown();                // the server stops: finish the request in flight, then close

  // ---- actions, to the driver ----
  // Takes the next action; false when there is none until the next event.
  bool next(Action& out);
  // Whether the driver should read from the socket now.
  bool wants_read() const;
  // Whether the connection has authenticated: with limits.auth it has a principal, without it
  // a request was dispatched. Until then it is pending (pending_slots.hpp); once true, for good.
  bool authenticated() const;
  bool closed() const { return closed_; }
  bool request_in_flight() const { return busy_; }
  // Whether a logon line was taken since the last call: the driver then wipes its read buffer,
  // which held the key.
  bool took_logon() { return std::exchange(took_logon_, false); }
  const auth::Peer& peer() const { return peer_; }
  // Who the connection acts for (empty: nobody yet, or authentication is off), and the
  // generation of its entry at the logon (auth::Principal::generation).
  const std::string& principal() const { return principal_; }
  std::uint64_t generation() const { return generation_; }
  // Bytes charged to the budget now (0 without one, and once closed).
  std::size_t charged() const { return charged_; }

 private:
  enum class Phase { None, AwaitingRequest, Writing };

  // After every event: frame what the rules allow, flush, account for what is held.
  void settle();
  // Frames and dispatches what has arrived, as far as the rules allow.
  void advance();
  // Fits the deadline to the new state and hands out the next Send (or the Close that follows
  // the last one).
  void flush();
  void queue_send(std::string bytes);
  void queue_error(const std::string& why);
  // The logon line after "EXCHANGE-LOGON" (" 1 NAME KEY"): answered, and the connection closed
  // when refused.
  void logon(const std::string& rest);
  // A request without a principal while authentication is on: one error, then close.
  void refuse_unauthenticated();
  // Whether the principal's entry changed (a new key, a removal) since the logon: if so, one
  // error, then close.
  bool session_ended();
  // Closes once everything queued is written; frames nothing more, so drops the input held.
  void finish();
  void close_now();
  void update_deadline();
  void emit(Action::Kind kind, std::string data = {});
  // Replies queued or being written.
  std::size_t unsent() const { return unsent_.size() + in_flight_; }
  // The budget is exhausted and this connection has replies unwritten: it waits for its peer.
  bool stalled_by_budget() const;
  // What is reserved in the budget for the reply to a request of this size while it runs.
  std::size_t reply_reserve(std::size_t request_bytes) const;
  // "Server busy" for the budget (counted there), then close.
  void refuse_for_budget();
  // Bytes the session holds: what the reader has, the request with the handler, the replies
  // (nothing once closed).
  std::size_t held() const;
  // Brings the budget's charge to held(); after every event, so it never drifts.
  void account();

  ConnectionLimits limits_;
  auth::Peer peer_;
  std::string principal_;
  std::uint64_t generation_ = 0;
  std::string certificate_name_;  // verified, whether or not it names a principal
  FrameReader reader_;
  std::deque<Action> actions_;
  std::string unsent_;         // queued, not yet handed out as a Send
  std::size_t in_flight_ = 0;  // bytes of the Send the driver is writing
  bool sending_ = false;       // a Send is with the driver
  bool busy_ = false;          // a Dispatch is with the handler
  bool persistent_ = false;    // the session hello was accepted
  bool took_logon_ = false;    // a logon line was taken (took_logon())
  bool served_ = false;        // a request was dispatched (one-shot connections take one)
  bool peer_eof_ = false;      // the peer sent EOF
  bool stopping_ = false;      // shutdown() was called
  bool close_after_flush_ = false;
  bool closed_ = false;
  // The deadline the driver is running, and which wait it belongs to: a new request wait or a
  // new write restarts it, the same one does not.
  Phase armed_ = Phase::None;
  std::size_t armed_seq_ = 0;
  std::size_t requests_ = 0;          // dispatched so far: numbers the waits for a request
  std::size_t sends_ = 0;             // Sends emitted so far: numbers the writes
  std::size_t dispatched_bytes_ = 0;  // size of the request with the handler
  std::size_t charged_ = 0;           // bytes charged to limits_.budget
};

// The error texts a client can get from the session itself (not from the request handler).
namespace session_errors {
inline constexpr const char* kTimedOut =
    "Bad framing: timed out waiting for the rest of the request";
inline constexpr const char* kClosedEarly =
    "Bad framing: connection closed before the whole request arrived";
inline constexpr const char* kBuffersFull =
    "Server busy: buffered bytes over --max-buffered-bytes; retry later";
inline constexpr const char* kNotAuthenticated =
    "Not authenticated: log on first (EXCHANGE-LOGON 1 NAME KEY) or present a client "
    "certificate";
inline constexpr const char* kSessionEnded =
    "Not authenticated: the principal's key changed or it was removed from the principals file "
    "since this session logged on; log on again";
inline constexpr const char* kUnknownCertificate =
    "Not authenticated: the client certificate's name is not a principal of this exchange";
// After wire::kLogonRefused and a space.
inline constexpr const char* kLogonBadKey = "unknown principal or wrong key";
inline constexpr const char* kLogonLockedOut =
    "too many failed logons from this address; wait (--logon-lockout-ms)";
inline constexpr const char* kLogonNeedsTls =
    "key logons are accepted only over TLS or from a loopback address";
inline constexpr const char* kLogonMalformed = "expected EXCHANGE-LOGON 1 NAME KEY";
inline constexpr const char* kLogonOff = "authentication is off on this server (no --principals)";
}  // namespace session_errors

}  // namespace net

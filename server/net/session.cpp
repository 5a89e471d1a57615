#include "net/session.hpp"

#include <algorithm>
#include <utility>

namespace net {

Session::Session(const ConnectionLimits& limits, auth::Peer peer)
    : limits_(limits), peer_(std::move(peer)), reader_(limits.max_request_bytes) {}

Session::~Session() {
  if (limits_.budget) limits_.budget->release(charged_);
}

void Session::started(std::string certificate_name) {
  certificate_name_ = std::move(certificate_name);
  if (limits_.auth && !certificate_name_.empty()) {
    if (auto generation = limits_.auth->generation_of(certificate_name_)) {
      principal_ = certificate_name_;
      generation_ = *generation;
    }
  }
  settle();
}

void Session::logon(const std::string& rest) {
  // " 1 NAME KEY": the version, then two words, single spaces.
  constexpr std::string_view kVersion = " 1 ";
  const std::string_view words =
      std::string_view(rest).substr(std::min(rest.size(), kVersion.size()));
  const std::size_t space = words.find(' ');
  const bool well_formed = std::string_view(rest).substr(0, kVersion.size()) == kVersion &&
                           space != std::string_view::npos && space > 0 &&
                           space + 1 < words.size() &&
                           words.find(' ', space + 1) == std::string_view::npos;
  const char* refused = nullptr;
  if (!limits_.auth) {
    refused = session_errors::kLogonOff;
  } else if (!well_formed) {
    limits_.auth->refused(auth::Refusal::BadKey, peer_.address, {}, "malformed logon line");
    refused = session_errors::kLogonMalformed;
  } else {
    const std::string name(words.substr(0, space));
    const auto why = limits_.auth->logon(peer_, name, words.substr(space + 1), &generation_);
    if (!why) {
      principal_ = name;
      queue_send(std::string(wire::kLogonAccept) + '\n');
      return;
    }
    refused = *why == auth::Refusal::LockedOut     ? session_errors::kLogonLockedOut
              : *why == auth::Refusal::KeyNeedsTls ? session_errors::kLogonNeedsTls
                                                   : session_errors::kLogonBadKey;
  }
  queue_send(std::string(wire::kLogonRefused) + ' ' + refused + '\n');
  finish();
}

void Session::refuse_unauthenticated() {
  const bool unlisted = !certificate_name_.empty();
  limits_.auth->refused(
      unlisted ? auth::Refusal::UnknownCertificate : auth::Refusal::NotAuthenticated, peer_.address,
      certificate_name_);
  queue_error(unlisted ? session_errors::kUnknownCertificate : session_errors::kNotAuthenticated);
  finish();
}

bool Session::session_ended() {
  if (!limits_.auth || principal_.empty() || limits_.auth->current(principal_, generation_))
    return false;
  limits_.auth->refused(auth::Refusal::SessionEnded, peer_.address, principal_);
  queue_error(session_errors::kSessionEnded);
  finish();
  return true;
}

void Session::received(const char* data, std::size_t size) {
  if (closed_) return;
  const std::size_t allowance = limits_.unbudgeted_input_bytes;
  const std::size_t after = reader_.unframed() + size;  // what the reader holds once fed
  if (limits_.budget && after > allowance) {
    // The new bytes beyond the allowance must fit in the budget; the rest is charged below,
    // unconditionally, with everything else the session holds.
    const std::size_t beyond = std::min(size, after - allowance);
    if (!limits_.budget->try_charge(beyond)) {
      refuse_for_budget();
      settle();
      return;
    }
    charged_ += beyond;
  }
  reader_.feed(data, size);
  settle();
}

void Session::peer_closed() {
  if (closed_) return;
  peer_eof_ = true;
  settle();
}

void Session::failed() {
  if (closed_) return;
  close_now();
}

void Session::timed_out() {
  if (closed_) return;
  switch (armed_) {
    case Phase::None:
      return;  // no deadline is running: a late report of one already stopped
    case Phase::Writing:
      close_now();  // the peer does not read what it asked for
      return;
    case Phase::AwaitingRequest:
      if (!reader_.mid_request()) return close_now();  // idle: nothing to answer
      queue_error(session_errors::kTimedOut);
      finish();
      break;
  }
  settle();
}

void Session::sent() {
  if (closed_ || !sending_) return;
  sending_ = false;
  in_flight_ = 0;
  settle();
}

void Session::replied(std::string xml) {
  if (closed_ || !busy_) return;  // the peer went away while its request ran
  busy_ = false;
  queue_send(frame_reply(std::move(xml), persistent_));
  if (!persistent_ || stopping_) finish();
  settle();
}

void Session::shutdown() {
  if (closed_) return;
  stopping_ = true;
  if (!busy_) finish();  // a request with the handler still gets its reply first
  settle();
}

bool Session::next(Action& out) {
  if (actions_.empty()) return false;
  out = std::move(actions_.front());
  actions_.pop_front();
  return true;
}

bool Session::wants_read() const {
  return !closed_ && !peer_eof_ && !busy_ && !stopping_ && !close_after_flush_ &&
         !(served_ && !persistent_) && unsent() <= limits_.max_unsent_bytes && !stalled_by_budget();
}

bool Session::authenticated() const { return limits_.auth ? !principal_.empty() : served_; }

bool Session::stalled_by_budget() const {
  return limits_.budget && unsent() > 0 && limits_.budget->exhausted();
}

void Session::settle() {
  advance();
  flush();
  account();
}

void Session::advance() {
  while (!closed_ && !close_after_flush_ && !busy_ && !stopping_) {
    if (served_ && !persistent_) return;  // one request per connection without a session
    if (unsent() > limits_.max_unsent_bytes) return;  // let the peer read
    // A reply still being written waits for the peer; once it is written (or the write
    // deadline closes a peer that does not read) this runs again.
    if (stalled_by_budget()) return;
    std::string out;
    switch (reader_.next(out)) {
      case FrameReader::Event::NeedMore:
        if (peer_eof_) {
          if (reader_.mid_request()) queue_error(session_errors::kClosedEarly);
          finish();
        }
        return;
      case FrameReader::Event::Logon:
        took_logon_ = true;
        logon(out);
        // Nothing keeps the key: this copy is wiped (the reader wiped its own, the driver its
        // read buffer: took_logon()).
        std::fill(out.begin(), out.end(), '\0');
        continue;
      case FrameReader::Event::SessionHello:
        persistent_ = true;
        // Queued before any reply, so the peer reads the acknowledgement first.
        queue_send(std::string(wire::kSessionAccept) + '\n');
        continue;
      case FrameReader::Event::Error:
        queue_error(out);
        finish();
        return;
      case FrameReader::Event::Request:
        if (limits_.auth && principal_.empty()) return refuse_unauthenticated();
        if (session_ended()) return;
        if (limits_.budget && out.size() > limits_.small_request_bytes) {
          // Taken only if the request and the largest reply it may get fit in the budget
          // (a small one always is: its reply is small). Never dispatched otherwise: nothing
          // applied or journaled.
          const std::size_t after =
              reader_.buffered() + out.size() + reply_reserve(out.size()) + unsent();
          if (after > charged_) {
            // With nothing else charged it is taken even if it alone is over the budget (a
            // --max-reply-bytes above --max-buffered-bytes): one at a time, never none.
            const bool alone = limits_.budget->used() <= charged_;
            if (alone)
              limits_.budget->charge(after - charged_);
            else if (!limits_.budget->try_charge(after - charged_)) {
              refuse_for_budget();
              return;
            }
            charged_ = after;
          }
        }
        served_ = true;
        busy_ = true;
        ++requests_;
        dispatched_bytes_ = out.size();
        emit(Action::Kind::Dispatch, std::move(out));
        return;
    }
  }
}

void Session::queue_send(std::string bytes) { unsent_ += bytes; }

void Session::refuse_for_budget() {
  limits_.budget->count_refusal();
  queue_error(session_errors::kBuffersFull);
  finish();
}

std::size_t Session::reply_reserve(std::size_t request_bytes) const {
  return limits_.reply_bound.for_request(request_bytes);
}

std::size_t Session::held() const {
  if (closed_) return 0;
  return reader_.buffered() + (busy_ ? dispatched_bytes_ + reply_reserve(dispatched_bytes_) : 0) +
         unsent();
}

void Session::account() {
  if (!limits_.budget) return;
  const std::size_t now = held();
  if (now > charged_)
    limits_.budget->charge(now - charged_);
  else
    limits_.budget->release(charged_ - now);
  charged_ = now;
}

void Session::queue_error(const std::string& why) {
  queue_send(frame_reply(framing_error_reply(why), persistent_));
}

void Session::finish() {
  close_after_flush_ = true;
  reader_.discard();  // nothing more is framed: what is buffered goes back to the budget now
}

void Session::flush() {
  if (closed_) return;
  if (!sending_ && unsent_.empty() && close_after_flush_) return close_now();
  const bool start_send = !sending_ && !unsent_.empty();
  if (start_send) {
    sending_ = true;
    in_flight_ = unsent_.size();
    ++sends_;
  }
  // The deadline first: a blocking driver writes as it takes the Send, and that write must
  // already be bounded by its own deadline.
  update_deadline();
  if (start_send) {
    emit(Action::Kind::Send, std::move(unsent_));
    unsent_.clear();
  }
}

void Session::close_now() {
  closed_ = true;
  busy_ = false;
  unsent_.clear();
  in_flight_ = 0;
  reader_.discard();
  account();  // everything back to the budget
  // Whatever the driver has not taken yet is moot now: Close is the last action.
  actions_.clear();
  armed_ = Phase::None;
  emit(Action::Kind::Close);
}

void Session::update_deadline() {
  if (closed_) return;
  Phase want = Phase::None;
  std::size_t seq = 0;
  if (sending_) {
    want = Phase::Writing;
    seq = sends_;
  } else if (!busy_) {
    want = Phase::AwaitingRequest;
    seq = requests_;
  }
  if (want == Phase::None) {
    if (armed_ != Phase::None) emit(Action::Kind::StopDeadline);
    armed_ = Phase::None;
    return;
  }
  if (want == armed_ && seq == armed_seq_) return;  // the same wait goes on
  emit(Action::Kind::StartDeadline);
  armed_ = want;
  armed_seq_ = seq;
}

void Session::emit(Action::Kind kind, std::string data) {
  actions_.push_back(Action{kind, std::move(data)});
}

}  // namespace net

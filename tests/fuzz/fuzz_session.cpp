// libFuzzer target: the connection state machine (net::Session) driven by random byte chunks
// interleaved with random socket events (EOF, reset, timeout, write done, reply, shutdown),
// as a hostile peer and an unlucky network can order them. It must never crash, and it must
// keep the rules the drivers rely on (tests/support/session_rules.hpp, which the unit test
// checks too: one Send at a time, one Dispatch at a time, no request over the size limit,
// nothing after Close, no reading once closed) and bounded output; and
// the buffer budget's: the session's charge is always exactly what it holds (the budget
// counts nothing else but a fixed charge standing for other connections), nothing once
// closed, and nothing at all once the session is gone.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include "net/buffer_budget.hpp"
#include "net/session.hpp"
#include "support/session_rules.hpp"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 4) return 0;
  net::ConnectionLimits limits;
  limits.max_request_bytes = 1 + data[0] * 4;
  limits.max_unsent_bytes = 1 + data[1] * 8;
  // A budget as small as a few bytes (so every rule of it is reached), with a charge of other
  // connections' that sometimes exhausts it from the start.
  auto budget = std::make_shared<net::BufferBudget>(1 + data[2] * 16);
  const std::size_t others = static_cast<std::size_t>(data[3]) * 8;
  budget->charge(others);
  limits.budget = budget;
  limits.unbudgeted_input_bytes = 1 + data[2] % 64;
  limits.small_request_bytes = data[3] % 32;
  data += 4;
  size -= 4;

  auto owned = std::make_unique<net::Session>(limits);
  net::Session& session = *owned;
  testing_support::SessionRules rules(limits.max_request_bytes);
  std::size_t pending_bytes = 0;  // Sent out by the session, not yet written
  auto drain = [&] {
    net::Session::Action a;
    while (session.next(a)) {
      check(rules.take(a) == nullptr);
      if (a.kind == net::Session::Action::Kind::Send) pending_bytes = a.data.size();
    }
    check(rules.settled(session) == nullptr);
    check(budget->used() == others + session.charged());
  };

  session.started();
  drain();
  std::size_t pos = 0;
  while (pos < size && !rules.closed) {
    std::uint8_t op = data[pos++];
    switch (op % 8) {
      case 0:
      case 1:
      case 2: {  // bytes: the next (op / 8 + 1) of the input
        std::size_t n = std::min<std::size_t>(op / 8 + 1, size - pos);
        if (session.wants_read()) session.received(reinterpret_cast<const char*>(data) + pos, n);
        pos += n;
        break;
      }
      case 3:
        if (rules.sending) {
          rules.sent();
          session.sent();
        }
        break;
      case 4:
        if (rules.dispatched) {
          rules.answered();
          // A reply whose size comes from the op, so some exceed the output bound.
          session.replied(std::string(static_cast<std::size_t>(op) * 7, 'r'));
        }
        break;
      case 5:
        if (op & 0x80)
          session.failed();
        else
          session.peer_closed();
        break;
      case 6:
        session.timed_out();
        break;
      case 7:
        session.shutdown();
        break;
    }
    drain();
    // Output is bounded: what is queued beyond the Send in flight never exceeds the bound by
    // more than one reply (255 * 7 here) and one error or acknowledgement.
    check(pending_bytes <= limits.max_unsent_bytes + 255 * 7 + 4096);
  }
  owned.reset();  // however it ended, or did not: everything charged comes back
  check(budget->used() == others);
  return 0;
}

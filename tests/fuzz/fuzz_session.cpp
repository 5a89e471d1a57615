// libFuzzer target: the connection state machine (net::Session) driven by random byte chunks
// interleaved with random socket events (EOF, reset, timeout, write done, reply, shutdown),
// as a hostile peer and an unlucky network can order them. It must never crash, and it must
// keep the rules the drivers rely on: one Send at a time, one Dispatch at a time, no request
// over the size limit, nothing after Close, no reading once closed, and bounded output; and
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

  using Kind = net::Session::Action::Kind;
  auto owned = std::make_unique<net::Session>(limits);
  net::Session& session = *owned;
  bool sending = false, dispatched = false, closed = false, deadline = false;
  std::size_t pending_bytes = 0;  // Sent out by the session, not yet written
  auto drain = [&] {
    net::Session::Action a;
    while (session.next(a)) {
      check(!closed);
      switch (a.kind) {
        case Kind::Send:
          check(!sending && !a.data.empty() && deadline);  // every write bounded from its start
          sending = true;
          pending_bytes = a.data.size();
          break;
        case Kind::Dispatch:
          check(!dispatched && a.data.size() <= limits.max_request_bytes);
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
          break;
      }
    }
    check(!closed || !session.wants_read());
    check(!closed || session.closed());
    check(budget->used() == others + session.charged());
    check(!closed || session.charged() == 0);
  };

  session.started();
  drain();
  std::size_t pos = 0;
  while (pos < size && !closed) {
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
        if (sending) {
          sending = false;
          session.sent();
        }
        break;
      case 4:
        if (dispatched) {
          dispatched = false;
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

#pragma once
// What a concurrency model serves: one request's payload in, exactly one reply out. Every model
// runs the same Handler (the exchange's app::RequestHandler, or the durable floor's
// FloorHandler), so how threads are arranged never changes what a request does.
//
// The serving interface (this and metrics_sink.hpp) is all that concurrency/ knows of what it
// serves: it is header-only and links only auth's Caller, so the layer that decides which thread
// runs a request builds without the exchange, the store or libpqxx.
#include <functional>
#include <string>
#include <string_view>

#include "auth/caller.hpp"

namespace serving {

class Handler {
 public:
  using Reply = std::function<void(std::string)>;
  virtual ~Handler() = default;
  // Calls `done` exactly once with the reply: inline, or later on another thread. Called from
  // any thread; must not block for long (it never waits for a commit). `caller`: who sent it.
  virtual void handle(std::string_view payload, const auth::Caller& caller, Reply done) = 0;
};

}  // namespace serving

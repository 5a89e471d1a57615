#pragma once
// What a concurrency model serves: one request's payload in, exactly one reply out. Every model
// runs the same Handler (the exchange's RequestHandler, or the durable floor's), so how threads
// are arranged never changes what a request does.
#include <functional>
#include <string>
#include <string_view>

namespace app {

class Handler {
 public:
  using Reply = std::function<void(std::string)>;
  virtual ~Handler() = default;
  // Calls `done` exactly once with the reply: inline, or later on another thread. Must not
  // block for long (it never waits for a commit).
  virtual void handle(std::string_view payload, Reply done) = 0;
};

}  // namespace app

#pragma once
// A submitted request's result on its way (DurableEngine::submit): it ends once, with an Outcome
// and, if Durable, the reply prepared from the result. The caller attaches one continuation
// (then) or, in tests, waits for it (wait). Whichever comes first, the end or the
// continuation, the other runs it: on the submitting thread if the request ended at once
// (refused, or a read whose results were already durable), else on the thread that ended it
// (the commit thread or an archive thread), which must stay free: continuations only hand
// the reply on.
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "app/outcome.hpp"

namespace app {

class Pending {
 public:
  using Continuation = std::function<void(Outcome, std::string prepared)>;
  struct Ended {
    Outcome outcome;
    std::string prepared;  // empty unless Durable
  };

  Pending();

  // Attaches the one continuation; call it once, and not together with wait().
  void then(Continuation continuation);
  // Blocks until the request ended (tests); not together with then().
  Ended wait();

  // The ending side (Exchange): ends it; call once. Copies share the one pending result.
  void end(Outcome outcome, std::string prepared = {}) const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace app

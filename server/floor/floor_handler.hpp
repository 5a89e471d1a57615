#pragma once
// The durable floor's request handler: what a request costs when the server does nothing but
// make it durable. No XML parsing, no matching, no rendering: the payload, as received, joins
// the open batch of store::Batcher as one journal row (seq, at, first_order_id 0, request),
// and the reply, a fixed one-order <results> document, is released once that row's group
// commit has returned. So exchange-floor, served by the same net/ and concurrency/ code as
// exchange-server, measures the framing, the threading and the durable group commit that
// every reply of the exchange waits for, and nothing of the exchange itself.
#include <cstdint>
#include <string>
#include <string_view>

#include "serving/handler.hpp"
#include "store/batcher.hpp"

namespace floor_server {

class FloorHandler final : public serving::Handler {
 public:
  explicit FloorHandler(store::Batcher& batcher) : batcher_(batcher) {}

  void handle(std::string_view payload, const auth::Caller& caller, Reply done) override;

  // The reply to a request journaled under `seq`: one <opened> child, so exchange-client bench
  // counts it as one order served, like the server's reply to a one-order request. Its
  // attributes are fixed (the floor does not read the request); its id is the journal seq.
  static std::string committed_reply(std::int64_t seq);

 private:
  store::Batcher& batcher_;
};

}  // namespace floor_server

#pragma once
// One request's way through the server, whatever the threads and sockets: parse, submit to the
// exchange, render. The exchange decides when the reply may leave (once what it reflects is
// durable); this only turns its outcome into the reply document and counts it.
#include <string>
#include <string_view>

#include "app/exchange.hpp"
#include "app/handler.hpp"
#include "app/metrics.hpp"

namespace app {

class RequestHandler : public Handler {
 public:
  // `metrics` counts every answered request by root and outcome, with its latency.
  RequestHandler(Exchange& exchange, Metrics& metrics) : exchange_(exchange), metrics_(metrics) {}

  void handle(std::string_view payload, Reply done) override;

 private:
  Exchange& exchange_;
  Metrics& metrics_;
};

}  // namespace app

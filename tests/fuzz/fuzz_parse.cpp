// libFuzzer target: arbitrary bytes as a request payload, through parse, apply (on an engine
// with a little state) and render. It must never crash, and every reply must be well-formed
// XML with a <results> root, whatever the request was.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include <pugixml.hpp>

#include "app/apply.hpp"
#include "protocol/parse.hpp"
#include "protocol/render.hpp"

namespace {

market::Engine make_engine() {
  market::Engine engine;
  market::Effects fx;
  engine.create_account("1", market::Decimal::from_int(1000000), fx);
  engine.create_account("2", market::Decimal::from_int(1000000), fx);
  engine.add_shares("X", "1", market::Decimal::from_int(1000), fx);
  engine.add_shares("X", "2", market::Decimal::from_int(1000), fx);
  engine.place_order("2", "X", market::Decimal::from_int(-10), market::Decimal::from_int(5), 1, fx);
  // A waiting stop (PROTOCOL 4.7), so that executions at 5 or more can trigger it.
  market::OrderTerms stop{
      market::Decimal::from_int(3), market::Decimal::from_int(6), market::Decimal::from_int(5), {}};
  engine.place("1", "X", stop, 1, fx);
  return engine;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static market::Engine engine = make_engine();
  std::string_view payload(reinterpret_cast<const char*>(data), size);
  protocol::Command cmd = protocol::parse(payload, protocol::ParseLimits{});
  market::Effects fx;
  app::Admission admission = app::Admission::live(app::Limits{}, size);
  app::Applied applied = app::apply(cmd, engine, 1, fx, admission);
  std::string reply = protocol::render(applied.result);
  pugi::xml_document doc;
  if (!doc.load_buffer(reply.data(), reply.size()) || !doc.child("results")) std::abort();
  return 0;
}

// The order types of --ioc-ratio, --market-ratio and --replace-ratio: which type a request
// child gets, and the child of each type (PROTOCOL.md sections 4.5, 4.6 and 4.8).
#pragma once

#include <string>
#include <vector>

#include "bench/options.hpp"
#include "bench/rng.hpp"
#include "bench/workload.hpp"

namespace exch::bench {

// The type of a child whose uniform draw is u (0 <= u < 1): [0, ioc) IOC, then market, then
// replace, each as wide as its share; the rest a plain limit order (GTC).
OrderType order_type_for(const OrderTypeMix& mix, double u);

// A limit order made immediate-or-cancel: tif="IOC", everything else kept.
Child as_ioc(Child order);
// A limit order made a market order: the same symbol, side and amount, no limit, tif="IOC".
Child as_market(Child order);
// A replace of the order whose ids (one per target) are `ids`: new open shares 1..100 and a
// new limit in the price range (random_limit). The side stays the order's own.
Child replace_of(std::vector<std::string> ids, Rng& rng, unsigned price_decimals);

// Whether what the child leaves may rest on the book, so that a later replace or cancel can
// name it: a GTC order (no tif) or a replace. IOC and market orders never rest.
bool may_rest(const Child& child);

}  // namespace exch::bench

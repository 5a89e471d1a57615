#include "bench/order_mix.hpp"

#include <utility>

namespace exch::bench {

OrderType order_type_for(const OrderTypeMix& mix, double u) {
  if (u < mix.ioc) return OrderType::Ioc;
  u -= mix.ioc;
  if (u < mix.market) return OrderType::Market;
  u -= mix.market;
  if (u < mix.replace) return OrderType::Replace;
  return OrderType::Limit;
}

Child as_ioc(Child order) {
  order.tif = "IOC";
  return order;
}

Child as_market(Child order) {
  order.limit.clear();
  order.tif = "IOC";
  return order;
}

Child replace_of(std::vector<std::string> ids, Rng& rng, unsigned price_decimals) {
  Child c;
  c.kind = ChildKind::Replace;
  c.ids = std::move(ids);
  c.shares = std::to_string(rng.uniform(1, 100));
  c.limit = random_limit(rng, price_decimals);
  return c;
}

bool may_rest(const Child& child) {
  return (child.kind == ChildKind::Order && child.tif.empty()) || child.kind == ChildKind::Replace;
}

}  // namespace exch::bench

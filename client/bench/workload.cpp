#include "bench/workload.hpp"

#include <algorithm>

#include "bench/order_mix.hpp"
#include "wire/xml_escape.hpp"

namespace exch::bench {

namespace {

const char* kDecl = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";

std::string id_for(const Child& c, std::size_t target) {
  return wire::xml_escaped(c.ids.size() > target ? c.ids[target] : c.ids.at(0));
}

// One child as a line of <transactions>; an order writes limit and tif only when it has them,
// so a plain order is the same text as before those attributes existed.
void render_child(const Child& c, std::size_t target, std::string& x) {
  switch (c.kind) {
    case ChildKind::Order:
      x += "  <order sym=\"" + c.sym + "\" amount=\"" + c.amount + "\"";
      if (!c.limit.empty()) x += " limit=\"" + c.limit + "\"";
      if (!c.tif.empty()) x += " tif=\"" + c.tif + "\"";
      x += "/>\n";
      break;
    case ChildKind::Query:
      x += "  <query id=\"" + id_for(c, target) + "\"/>\n";
      break;
    case ChildKind::Cancel:
      x += "  <cancel id=\"" + id_for(c, target) + "\"/>\n";
      break;
    case ChildKind::Replace:
      x += "  <replace id=\"" + id_for(c, target) + "\" shares=\"" + c.shares + "\" limit=\"" +
           c.limit + "\"/>\n";
      break;
    case ChildKind::CreateItem:
      break;
  }
}

}  // namespace

std::string format_price(std::int64_t scaled, unsigned decimals) {
  std::int64_t scale = 1;
  for (unsigned i = 0; i < decimals; ++i) scale *= 10;
  std::string out = std::to_string(scaled / scale);
  if (decimals > 0) {
    std::string frac = std::to_string(scaled % scale);
    out += '.';
    out.append(decimals - frac.size(), '0');
    out += frac;
  }
  return out;
}

std::string random_limit(Rng& rng, unsigned decimals) {
  std::int64_t scale = 1;
  for (unsigned i = 0; i < decimals; ++i) scale *= 10;
  return format_price(rng.uniform(90 * scale, 110 * scale), decimals);
}

std::size_t Request::items() const { return transactions ? children.size() : create_kinds.size(); }

std::vector<ChildKind> Request::kinds() const {
  if (!transactions) return create_kinds;
  std::vector<ChildKind> k;
  k.reserve(children.size());
  for (const auto& c : children) k.push_back(c.kind);
  return k;
}

std::string Request::render(std::size_t target) const {
  if (!transactions) return create_xml;
  std::string x = kDecl;
  x += "<transactions id=\"" + account + "\">\n";
  for (const auto& c : children) render_child(c, target, x);
  x += "</transactions>\n";
  return x;
}

IdPool::IdPool(std::size_t accounts, std::size_t per_account_cap)
    : cap_(per_account_cap), ids_(accounts) {}

void IdPool::add(std::size_t account, std::vector<std::string> ids_per_target) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto& list = ids_.at(account);
  if (list.empty()) with_ids_.push_back(account);
  if (list.size() >= cap_) {
    list.erase(list.begin());  // forget the oldest
    --total_;
  }
  list.push_back(std::move(ids_per_target));
  ++total_;
}

bool IdPool::pick(std::size_t account, Rng& rng, bool take, std::vector<std::string>& out) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto& list = ids_.at(account);
  if (list.empty()) return false;
  auto i = static_cast<std::size_t>(rng.uniform(0, static_cast<std::int64_t>(list.size()) - 1));
  if (!take) {
    out = list[i];
    return true;
  }
  out = std::move(list[i]);
  list[i] = std::move(list.back());
  list.pop_back();
  --total_;
  if (list.empty()) {
    auto it = std::find(with_ids_.begin(), with_ids_.end(), account);
    *it = with_ids_.back();
    with_ids_.pop_back();
  }
  return true;
}

bool IdPool::any_account(Rng& rng, std::size_t& account) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (with_ids_.empty()) return false;
  account = with_ids_[static_cast<std::size_t>(
      rng.uniform(0, static_cast<std::int64_t>(with_ids_.size()) - 1))];
  return true;
}

std::size_t IdPool::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return total_;
}

Workload::Workload(const BenchOptions& options)
    : o_(options),
      created_prefix_("9" + std::string(9 - std::min<std::size_t>(9, options.run_id.size()), '0') +
                      options.run_id),
      pool_(options.accounts) {
  for (const auto& c : o_.class_mix) class_weight_total_ += c.weight;
}

unsigned Workload::children(Rng& rng) const {
  if (o_.class_mix.empty()) return o_.orders_per_request;
  double u = rng.uniform01() * class_weight_total_;
  for (const auto& c : o_.class_mix) {
    if (u < c.weight) return c.children;
    u -= c.weight;
  }
  return o_.class_mix.back().children;  // u landed on the total by rounding
}

std::string Workload::account_id(std::size_t i) const {
  return std::to_string(o_.account_base + i);
}

std::string Workload::symbol(std::size_t i) const { return o_.symbol_prefix + std::to_string(i); }

Child Workload::random_order(Rng& rng) const {
  Child c;
  c.kind = ChildKind::Order;
  c.sym = symbol(static_cast<std::size_t>(rng.uniform(0, o_.symbols - 1)));
  bool buy = rng.uniform(0, 1) == 1;
  std::int64_t amount = rng.uniform(1, 100);
  c.amount = (buy ? "" : "-") + std::to_string(amount);
  c.limit = random_limit(rng, o_.price_decimals);
  return c;
}

Child Workload::typed_order(Rng& rng, std::size_t account, OrderType type) {
  switch (type) {
    case OrderType::Ioc:
      return as_ioc(random_order(rng));
    case OrderType::Market:
      return as_market(random_order(rng));
    case OrderType::Replace: {
      std::vector<std::string> ids;
      if (pool_.pick(account, rng, true, ids))
        return replace_of(std::move(ids), rng, o_.price_decimals);
      break;  // nothing of this account's known to rest yet
    }
    case OrderType::Limit:
      break;
  }
  return random_order(rng);
}

Child Workload::next_order(Rng& rng, std::size_t account) {
  // Without the ratios no type is drawn: the same seed gives the same requests as before.
  if (!o_.order_types.any()) return random_order(rng);
  return typed_order(rng, account, order_type_for(o_.order_types, rng.uniform01()));
}

Request Workload::make_order_request(Rng& rng, std::size_t account) {
  Request r;
  r.transactions = true;
  r.account_index = account;
  r.account = account_id(account);
  for (unsigned i = 0, n = children(rng); i < n; ++i)
    r.children.push_back(next_order(rng, account));
  return r;
}

Request Workload::make_create(Rng& rng) {
  Request r;
  std::string x = kDecl;
  x += "<create>\n";
  for (unsigned i = 0; i < o_.accounts_per_request; ++i) {
    std::string id = created_prefix_ + std::to_string(next_new_account_.fetch_add(1));
    std::string sym = symbol(static_cast<std::size_t>(rng.uniform(0, o_.symbols - 1)));
    x += "  <account id=\"" + id + "\" balance=\"100000\"/>\n";
    x += "  <symbol sym=\"" + sym + "\"><account id=\"" + id + "\">100</account></symbol>\n";
    r.create_kinds.push_back(ChildKind::CreateItem);
    r.create_kinds.push_back(ChildKind::CreateItem);
  }
  x += "</create>\n";
  r.create_xml = std::move(x);
  return r;
}

Request Workload::make_mixed(Rng& rng) {
  auto account = static_cast<std::size_t>(rng.uniform(0, o_.accounts - 1));
  Request r;
  r.transactions = true;
  r.account_index = account;
  r.account = account_id(account);
  const double queries_and_cancels = o_.query_ratio + o_.cancel_ratio;
  for (unsigned i = 0, n = children(rng); i < n; ++i) {
    // One draw: [0, query) query, then cancel, then the order types' shares, the rest GTC.
    double u = rng.uniform01();
    Child c;
    if (u < queries_and_cancels) {
      bool cancel = u >= o_.query_ratio;
      if (pool_.pick(account, rng, cancel, c.ids)) {
        c.kind = cancel ? ChildKind::Cancel : ChildKind::Query;
        r.children.push_back(std::move(c));
        continue;
      }
      r.children.push_back(random_order(rng));  // no id known yet
      continue;
    }
    OrderType type = order_type_for(o_.order_types, u - queries_and_cancels);
    r.children.push_back(typed_order(rng, account, type));
  }
  return r;
}

Request Workload::make_query(Rng& rng) {
  std::size_t account = 0;
  if (!pool_.any_account(rng, account)) {
    // Nothing learned (e.g. --no-setup): query an id that is surely not
    // ours; the <error> reply shows up in the error counts.
    Request r;
    r.transactions = true;
    r.account_index = static_cast<std::size_t>(rng.uniform(0, o_.accounts - 1));
    r.account = account_id(r.account_index);
    Child c;
    c.kind = ChildKind::Query;
    c.ids.push_back("0");
    r.children.push_back(std::move(c));
    return r;
  }
  Request r;
  r.transactions = true;
  r.account_index = account;
  r.account = account_id(account);
  for (unsigned i = 0, n = children(rng); i < n; ++i) {
    Child c;
    c.kind = ChildKind::Query;
    if (!pool_.pick(account, rng, false, c.ids)) break;
    r.children.push_back(std::move(c));
  }
  return r;
}

Request Workload::next(Rng& rng) {
  switch (o_.workload) {
    case WorkloadKind::Create:
      return make_create(rng);
    case WorkloadKind::Orders:
      return make_order_request(rng, static_cast<std::size_t>(rng.uniform(0, o_.accounts - 1)));
    case WorkloadKind::Mixed:
      return make_mixed(rng);
    case WorkloadKind::Query:
      return make_query(rng);
  }
  return {};
}

void Workload::learn(const Request& request, const std::vector<const ReplyVerdict*>& verdicts) {
  if (!request.transactions || verdicts.empty()) return;
  for (const ReplyVerdict* v : verdicts)
    if (v == nullptr || !v->positional) return;
  for (std::size_t i = 0; i < request.children.size(); ++i) {
    // GTC orders, and replaced orders back into the pool they were taken from; not IOC or
    // market orders, which never rest.
    if (!may_rest(request.children[i])) continue;
    std::vector<std::string> ids;
    for (const ReplyVerdict* v : verdicts) {
      if (v->opened_ids[i].empty()) break;
      ids.push_back(v->opened_ids[i]);
    }
    if (ids.size() == verdicts.size()) pool_.add(request.account_index, std::move(ids));
  }
}

std::vector<Request> Workload::setup_requests() const {
  std::vector<Request> out;
  for (std::size_t first = 0; first < o_.accounts; first += o_.setup_batch) {
    std::size_t last = std::min<std::size_t>(o_.accounts, first + o_.setup_batch);
    Request r;
    std::string x = kDecl;
    x += "<create>\n";
    for (std::size_t a = first; a < last; ++a) {
      x += "  <account id=\"" + account_id(a) + "\" balance=\"" + o_.balance + "\"/>\n";
      r.create_kinds.push_back(ChildKind::CreateItem);
    }
    for (std::size_t s = 0; s < o_.symbols; ++s) {
      x += "  <symbol sym=\"" + symbol(s) + "\">\n";
      for (std::size_t a = first; a < last; ++a) {
        x += "    <account id=\"" + account_id(a) + "\">" + o_.shares + "</account>\n";
        r.create_kinds.push_back(ChildKind::CreateItem);
      }
      x += "  </symbol>\n";
    }
    x += "</create>\n";
    r.create_xml = std::move(x);
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<Request> Workload::seed_order_requests(Rng& rng) {
  std::vector<Request> out;
  for (std::size_t a = 0; a < o_.accounts; ++a) out.push_back(make_order_request(rng, a));
  return out;
}

}  // namespace exch::bench

#include "tools/final_state.hpp"

#include "tools/json_text.hpp"

namespace tools {

namespace {

std::string dec(const market::Decimal& d) { return json_string(d.to_string()); }

template <typename Map, typename Write>
void write_array(std::ostream& out, const char* name, const Map& rows, Write write_row) {
  out << json_string(name) << ": [";
  const char* sep = "\n";
  for (const auto& [key, row] : rows) {
    out << sep;
    write_row(row);
    sep = ",\n";
  }
  out << "]";
}

}  // namespace

void FinalState::absorb(const market::Effects& fx) {
  for (const auto& row : fx.accounts) accounts_[row.id] = row;
  for (const auto& row : fx.positions) positions_[{row.account, row.symbol}] = row;
  for (const auto& row : fx.orders) orders_[row.id] = row;
  for (const auto& row : fx.executions) executions_[row.id] = row;
}

void FinalState::write_json(std::ostream& out) const {
  out << "{";
  write_array(out, "accounts", accounts_, [&](const market::AccountRow& r) {
    out << "{\"id\": " << json_string(r.id) << ", \"balance\": " << dec(r.balance)
        << ", \"deposited\": " << dec(r.deposited) << "}";
  });
  out << ",\n";
  write_array(out, "positions", positions_, [&](const market::PositionRow& r) {
    out << "{\"account_id\": " << json_string(r.account)
        << ", \"symbol\": " << json_string(r.symbol) << ", \"amount\": " << dec(r.amount)
        << ", \"granted\": " << dec(r.granted) << "}";
  });
  out << ",\n";
  write_array(out, "orders", orders_, [&](const market::OrderRow& r) {
    out << "{\"id\": " << r.id << ", \"account_id\": " << json_string(r.account)
        << ", \"symbol\": " << json_string(r.symbol) << ", \"amount\": " << dec(r.amount)
        << ", \"limit_price\": " << (r.limit.is_zero() ? "null" : dec(r.limit))  // market: NULL
        << ", \"open_amount\": " << dec(r.open) << ", \"created_at\": " << r.created_at
        << ", \"canceled_at\": " << (r.canceled_at ? std::to_string(*r.canceled_at) : "null")
        << ", \"priority\": " << r.priority
        << ", \"stop_price\": " << (r.stop ? dec(*r.stop) : "null") << "}";
  });
  out << ",\n";
  write_array(out, "executions", executions_, [&](const market::ExecutionRow& r) {
    out << "{\"id\": " << r.id << ", \"buy_order\": " << r.buy_order
        << ", \"sell_order\": " << r.sell_order << ", \"shares\": " << dec(r.shares)
        << ", \"price\": " << dec(r.price) << ", \"executed_at\": " << r.time << "}";
  });
  out << "}\n";
}

}  // namespace tools

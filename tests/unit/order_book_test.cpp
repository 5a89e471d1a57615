// market::OrderBook: price levels, FIFO within a level, best_match against a limit.
#include "market/order_book.hpp"

#include <deque>
#include <string>

#include <catch2/catch.hpp>

#include "support/decimal.hpp"

using market::Decimal;
using market::Order;
using market::OrderBook;
using testing_support::dec;

namespace {

// Owns the orders (the book only holds pointers); deque keeps addresses stable.
struct Orders {
  std::deque<Order> all;
  Order& make(const std::string& amount, const std::string& limit) {
    Order& o = all.emplace_back();
    o.id = static_cast<market::OrderId>(all.size());
    o.account = "1";
    o.symbol = "X";
    o.amount = dec(amount);
    o.limit = dec(limit);
    o.open = o.amount.abs();
    return o;
  }
  // An incoming order that is not on the book.
  Order probe(const std::string& amount, const std::string& limit) {
    Order o;
    o.amount = dec(amount);
    o.limit = dec(limit);
    o.open = o.amount.abs();
    return o;
  }
};

}  // namespace

TEST_CASE("an empty book matches nothing", "[order_book]") {
  OrderBook book;
  Orders o;
  CHECK(book.bid_levels() == 0);
  CHECK(book.ask_levels() == 0);
  CHECK(book.best_match(o.probe("10", "1000000")) == nullptr);
  CHECK(book.best_match(o.probe("-10", "0.000001")) == nullptr);
}

TEST_CASE("a buy matches the lowest ask first", "[order_book]") {
  OrderBook book;
  Orders o;
  Order& a130 = o.make("-100", "130");
  Order& a128 = o.make("-500", "128");
  Order& a140 = o.make("-200", "140");
  book.add(a130);
  book.add(a128);
  book.add(a140);
  CHECK(book.ask_levels() == 3);
  CHECK(book.bid_levels() == 0);

  CHECK(book.best_match(o.probe("1", "200")) == &a128);
  CHECK(book.best_match(o.probe("1", "128")) == &a128);  // equal limits cross
  CHECK(book.best_match(o.probe("1", "127.999999")) == nullptr);
  book.remove(a128);
  CHECK(book.ask_levels() == 2);
  CHECK(book.best_match(o.probe("1", "200")) == &a130);
  CHECK(book.best_match(o.probe("1", "129")) == nullptr);
  book.remove(a130);
  CHECK(book.best_match(o.probe("1", "200")) == &a140);
  book.remove(a140);
  CHECK(book.ask_levels() == 0);
  CHECK(book.best_match(o.probe("1", "200")) == nullptr);
}

TEST_CASE("a sell matches the highest bid first", "[order_book]") {
  OrderBook book;
  Orders o;
  Order& b125 = o.make("300", "125");
  Order& b127 = o.make("200", "127");
  Order& b120 = o.make("50", "120");
  book.add(b125);
  book.add(b127);
  book.add(b120);
  CHECK(book.bid_levels() == 3);
  CHECK(book.ask_levels() == 0);

  CHECK(book.best_match(o.probe("-400", "124")) == &b127);
  CHECK(book.best_match(o.probe("-1", "127")) == &b127);
  CHECK(book.best_match(o.probe("-1", "127.000001")) == nullptr);
  book.remove(b127);
  CHECK(book.best_match(o.probe("-1", "124")) == &b125);
  CHECK(book.best_match(o.probe("-1", "125.5")) == nullptr);
  book.remove(b125);
  CHECK(book.best_match(o.probe("-1", "1")) == &b120);
}

TEST_CASE("bids and asks are kept apart", "[order_book]") {
  OrderBook book;
  Orders o;
  Order& bid = o.make("10", "100");
  Order& ask = o.make("-10", "101");
  book.add(bid);
  book.add(ask);
  CHECK(book.bid_levels() == 1);
  CHECK(book.ask_levels() == 1);
  // A buy never matches a bid, a sell never matches an ask.
  CHECK(book.best_match(o.probe("5", "1000")) == &ask);
  CHECK(book.best_match(o.probe("-5", "1")) == &bid);
  CHECK(book.best_match(o.probe("5", "100.5")) == nullptr);
  CHECK(book.best_match(o.probe("-5", "100.5")) == nullptr);
}

TEST_CASE("FIFO within a price level", "[order_book]") {
  OrderBook book;
  Orders o;
  Order& first = o.make("-10", "50");
  Order& second = o.make("-20", "50");
  Order& third = o.make("-30", "50.000000");  // same price written differently
  book.add(first);
  book.add(second);
  book.add(third);
  CHECK(book.ask_levels() == 1);
  CHECK(book.best_match(o.probe("100", "50")) == &first);
  book.remove(first);
  CHECK(book.ask_levels() == 1);
  CHECK(book.best_match(o.probe("100", "50")) == &second);
  book.remove(second);
  CHECK(book.best_match(o.probe("100", "50")) == &third);
  book.remove(third);
  CHECK(book.ask_levels() == 0);
}

TEST_CASE("FIFO within a bid level, and a later better price jumps ahead", "[order_book]") {
  OrderBook book;
  Orders o;
  Order& early = o.make("10", "99");
  Order& late = o.make("10", "99");
  book.add(early);
  book.add(late);
  CHECK(book.best_match(o.probe("-1", "99")) == &early);
  Order& better = o.make("10", "99.01");
  book.add(better);
  CHECK(book.bid_levels() == 2);
  CHECK(book.best_match(o.probe("-1", "99")) == &better);
  book.remove(better);
  CHECK(book.best_match(o.probe("-1", "99")) == &early);
}

TEST_CASE("removing from the middle of a level keeps the others in order", "[order_book]") {
  OrderBook book;
  Orders o;
  Order& a = o.make("5", "10");
  Order& b = o.make("5", "10");
  Order& c = o.make("5", "10");
  Order& d = o.make("5", "10");
  for (Order* x : {&a, &b, &c, &d}) book.add(*x);
  book.remove(c);  // middle
  book.remove(b);  // middle again
  CHECK(book.bid_levels() == 1);
  CHECK(book.best_match(o.probe("-1", "10")) == &a);
  book.remove(a);
  CHECK(book.best_match(o.probe("-1", "10")) == &d);
  // A re-added order goes to the back.
  book.add(b);
  CHECK(book.best_match(o.probe("-1", "10")) == &d);
  book.remove(d);
  CHECK(book.best_match(o.probe("-1", "10")) == &b);
  book.remove(b);
  CHECK(book.bid_levels() == 0);
  CHECK(book.best_match(o.probe("-1", "10")) == nullptr);
}

TEST_CASE("empty levels disappear, others stay", "[order_book]") {
  OrderBook book;
  Orders o;
  Order& b1 = o.make("1", "1");
  Order& b2 = o.make("1", "2");
  Order& b2b = o.make("1", "2");
  Order& a3 = o.make("-1", "3");
  Order& a4 = o.make("-1", "4");
  for (Order* x : {&b1, &b2, &b2b, &a3, &a4}) book.add(*x);
  CHECK(book.bid_levels() == 2);
  CHECK(book.ask_levels() == 2);
  book.remove(b2);
  CHECK(book.bid_levels() == 2);  // b2b still rests at 2
  book.remove(b2b);
  CHECK(book.bid_levels() == 1);
  CHECK(book.best_match(o.probe("-1", "1")) == &b1);
  book.remove(a4);
  CHECK(book.ask_levels() == 1);
  CHECK(book.best_match(o.probe("1", "10")) == &a3);
  book.remove(a3);
  book.remove(b1);
  CHECK(book.bid_levels() == 0);
  CHECK(book.ask_levels() == 0);
}

TEST_CASE("fractional prices order correctly", "[order_book]") {
  OrderBook book;
  Orders o;
  Order& a = o.make("-1", "0.000002");
  Order& b = o.make("-1", "0.000001");
  Order& c = o.make("-1", "0.1");
  for (Order* x : {&a, &b, &c}) book.add(*x);
  CHECK(book.ask_levels() == 3);
  CHECK(book.best_match(o.probe("1", "0.000001")) == &b);
  book.remove(b);
  CHECK(book.best_match(o.probe("1", "0.000001")) == nullptr);
  CHECK(book.best_match(o.probe("1", "0.000002")) == &a);
}

// Queries of orders only PostgreSQL still holds (closed, projected and beyond
// --closed-orders-cached): a request's lookups take one statement however many it has, they
// never run on the event-loop thread, and they use at most --archive-connections connections,
// reused, replaced when broken, and closed when the server stops.
//
// The tests hold an ACCESS EXCLUSIVE lock on `orders` while requests arrive: every archive
// lookup then waits in PostgreSQL, so what the server does meanwhile (answer other clients,
// open connections, queue or refuse lookups) is seen without racing it. --db-timeout-ms is
// raised so that the watchdog does not cut those waits short.
#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "app/durable_engine.hpp"
#include "support/admin_scrape.hpp"
#include "support/reply_xml.hpp"
#include "support/server_process.hpp"
#include "support/test_database.hpp"
#include "support/wire_client.hpp"

using namespace testing_support;

namespace {

const std::string kDecl = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
const std::string kNoSuchOrder = "No such order for this account";
const std::string kBuyer = "101", kSeller = "102";

std::string transactions(const std::string& account, const std::string& body) {
  return kDecl + "<transactions id=\"" + account + "\">" + body + "</transactions>";
}

std::string create(const std::string& body) { return kDecl + "<create>" + body + "</create>"; }

// The ids of the <opened> items of a reply, in order; every item must be one.
std::vector<std::string> opened_ids(const std::string& reply) {
  ParsedReply r;
  parse_reply(reply, r);
  std::vector<std::string> ids;
  for (auto item : r.items) {
    REQUIRE(std::string(item.name()) == "opened");
    ids.push_back(item.attribute("id").value());
  }
  return ids;
}

// Closed orders of two accounts, all in the SQL tables and none in memory once forget_closed()
// ran. B is kBuyer, S kSeller.
//   B's buys: b[0] 3 @ 2, b[1..4] 1 @ 1, b[5] 2 @ 1, b[6..] 1 @ 1.
//   S sells 2 @ 1 (fills 2 of b[0] at 2), then 6 @ 1 (b[0]'s last at 2, b[1..4], one of b[5]).
//   B cancels b[5..]: b[5] canceled 1 after one fill, the rest canceled without a fill.
struct Book {
  std::vector<std::string> buys;   // account B's
  std::vector<std::string> sells;  // account S's, both filled
};

Book archived_book(unsigned short port, int buys) {
  REQUIRE(send_request(port, create("<account id=\"101\" balance=\"1000000\"/>"
                                    "<account id=\"102\" balance=\"0\"/>"
                                    "<symbol sym=\"ARC\"><account id=\"102\">8</account></symbol>"))
              .find("<error") == std::string::npos);
  std::string orders = "<order sym=\"ARC\" amount=\"3\" limit=\"2\"/>";
  for (int i = 1; i < buys; ++i)
    orders +=
        std::string("<order sym=\"ARC\" amount=\"") + (i == 5 ? "2" : "1") + "\" limit=\"1\"/>";
  Book book;
  book.buys = opened_ids(send_request(port, transactions(kBuyer, orders)));
  REQUIRE(book.buys.size() == static_cast<std::size_t>(buys));
  for (const char* amount : {"-2", "-6"}) {
    auto id = opened_ids(
        send_request(port, transactions(kSeller, std::string("<order sym=\"ARC\" amount=\"") +
                                                     amount + "\" limit=\"1\"/>")));
    book.sells.push_back(id.at(0));
  }
  std::string cancels;
  for (int i = 5; i < buys; ++i) cancels += "<cancel id=\"" + book.buys[i] + "\"/>";
  REQUIRE(send_request(port, transactions(kBuyer, cancels)).find("<error") == std::string::npos);
  return book;
}

// With --closed-orders-cached 0 the engine drops closed orders once the projection holds
// them, app::DurableEngine::kForgetPerRequest at each write: enough writes for all of `book`.
void forget_closed(unsigned short port, const Book& book) {
  REQUIRE(wait_for_projection());
  // The projector publishes its position just after its commit, which the wait saw.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const std::size_t closed = book.buys.size() + book.sells.size();
  for (std::size_t i = 0; i <= closed / app::DurableEngine::kForgetPerRequest; ++i)
    REQUIRE(
        send_request(port, create("<account id=\"103" + std::to_string(i) + "\" balance=\"1\"/>"))
            .find("<created") != std::string::npos);
}

std::string queries(const std::vector<std::string>& ids) {
  std::string out;
  for (const auto& id : ids) out += "<query id=\"" + id + "\"/>";
  return out;
}

// What `item` (a <status>) holds: "open N", "canceled N", "executed SHARES@PRICE" in order.
std::vector<std::string> status_of(const pugi::xml_node& item) {
  std::vector<std::string> out;
  if (std::string(item.name()) != "status") return {std::string("not a status: ") + item.name()};
  for (auto child : item.children()) {
    std::string name = child.name();
    if (name == "executed")
      out.push_back(name + " " + child.attribute("shares").value() + "@" +
                    child.attribute("price").value());
    else
      out.push_back(name + " " + child.attribute("shares").value());
  }
  return out;
}

using Status = std::vector<std::string>;

// Checks the status of b[0], b[3], b[5] and the last buy, which `items` list at these indexes.
void check_buys(const std::vector<pugi::xml_node>& items, std::size_t last) {
  CHECK(status_of(items.at(0)) == Status{"executed 2@2", "executed 1@2"});
  CHECK(status_of(items.at(3)) == Status{"executed 1@1"});
  CHECK(status_of(items.at(5)) == Status{"canceled 1", "executed 1@1"});
  CHECK(status_of(items.at(last)) == Status{"canceled 1"});
  CHECK(items.at(last).child("canceled").attribute("time").as_llong() > 0);
}

// This test's own connections, named so that counts of the server's leave them out (also
// those still exiting after the test closed them).
pqxx::connection& named(pqxx::connection& conn) {
  pqxx::nontransaction(conn).exec("SET application_name TO 'archive-test'");
  return conn;
}

// Holds an ACCESS EXCLUSIVE lock on `orders` from construction to release(): every reader of
// the table waits for it.
class OrdersLock {
 public:
  OrdersLock() : conn_(connect_database()), tx_(std::make_unique<pqxx::work>(named(conn_))) {
    tx_->exec("LOCK TABLE orders IN ACCESS EXCLUSIVE MODE");
  }
  void release() { tx_.reset(); }  // rolls back

 private:
  pqxx::connection conn_;
  std::unique_ptr<pqxx::work> tx_;
};

// One value, read at once (query_value() would first wait for the projection, which the lock
// holds up).
std::string value_now(const std::string& sql) {
  auto conn = connect_database();
  pqxx::nontransaction tx(named(conn));
  return tx.exec1(sql)[0].c_str();
}

long long count(const std::string& sql) { return std::stoll(value_now(sql)); }

// Readers of `orders` (other than the projector) waiting for the lock.
long long blocked_readers() {
  return count(
      "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
      "AND query LIKE '%FROM orders%' AND application_name <> 'exchange-projector'");
}

long long archive_connections() {
  return count("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'exchange-archive'");
}

// Polls `done` every 20 ms for up to `at_most`; whether it became true.
template <typename Done>
bool eventually(Done done, std::chrono::milliseconds at_most = std::chrono::seconds(15)) {
  const auto deadline = std::chrono::steady_clock::now() + at_most;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

// A counter of the exposition, 0 while absent (the assertions on its value then fail).
double counter(unsigned short admin, const std::string& name) {
  return std::max(0.0, scrape(admin, name));
}

}  // namespace

TEST_CASE("archive: thousands of archived queries take one statement, off the event loop",
          "[e2e][archive]") {
  const unsigned short admin = free_port();
  ServerProcess server({"--concurrency", "reactor", "--reset", "--closed-orders-cached", "0",
                        "--db-timeout-ms", "60000", "--admin-port", std::to_string(admin)});
  const int n = 3000;
  Book book = archived_book(server.port(), n);
  forget_closed(server.port(), book);

  // Every buy, both of S's orders (not B's), and an id never assigned.
  const std::string big =
      transactions(kBuyer, queries(book.buys) + queries(book.sells) + "<query id=\"999999999\"/>");
  const double statements_before = counter(admin, "exchange_archive_queries_total");
  const double orders_before = counter(admin, "exchange_archive_orders_total");

  OrdersLock lock;
  auto big_reply = std::async(std::launch::async, [&] { return send_request(server.port(), big); });
  REQUIRE(eventually([] { return blocked_readers() >= 1; }));
  // The big request's lookup is stuck in PostgreSQL; another client is served all the same.
  auto other = std::async(std::launch::async, [&] {
    return send_request(server.port(), create("<account id=\"104\" balance=\"5\"/>"));
  });
  const bool answered_meanwhile =
      other.wait_for(std::chrono::seconds(5)) == std::future_status::ready;
  lock.release();
  CHECK(answered_meanwhile);
  CHECK(other.get().find("<created") != std::string::npos);

  ParsedReply r;
  parse_reply(big_reply.get(), r);
  REQUIRE(r.items.size() == static_cast<std::size_t>(n) + 3);
  for (int i = 0; i < n; ++i) REQUIRE(std::string(r.items[i].name()) == "status");
  check_buys(r.items, n - 1);
  for (int i = 6; i < n; i += 997) CHECK(status_of(r.items[i]) == Status{"canceled 1"});
  for (int i = n; i < n + 3; ++i) {
    CHECK(std::string(r.items[i].name()) == "error");
    CHECK(std::string(r.items[i].text().get()) == kNoSuchOrder);
  }
  // One statement for the n + 2 orders only the database holds.
  CHECK(counter(admin, "exchange_archive_queries_total") - statements_before == 1);
  CHECK(counter(admin, "exchange_archive_orders_total") - orders_before == n + 2);
  CHECK(server.stop() == 0);
}

TEST_CASE("archive: 50 clients at once use at most --archive-connections connections",
          "[e2e][archive]") {
  const unsigned short admin = free_port();
  ServerProcess server({"--concurrency", "per-request", "--reset", "--closed-orders-cached", "0",
                        "--archive-connections", "2", "--db-timeout-ms", "60000", "--admin-port",
                        std::to_string(admin)});
  const int n = 20, clients = 50;
  Book book = archived_book(server.port(), n);
  forget_closed(server.port(), book);
  const std::string request = transactions(kBuyer, queries(book.buys));

  OrdersLock lock;
  std::vector<std::future<std::string>> replies;
  for (int c = 0; c < clients; ++c)
    replies.push_back(
        std::async(std::launch::async, [&] { return send_request(server.port(), request); }));
  // Every request has arrived: its lookup either waits for the lock in PostgreSQL or waits
  // for a connection in the server.
  CHECK(eventually([&] {
    return blocked_readers() + std::max(0.0, scrape(admin, "exchange_archive_waiting")) >= clients;
  }));
  const long long while_busy = archive_connections();
  // All of the server's: the archive's, the journal writer's, the projector's, the health
  // check's (and perhaps one more the writer opened to learn a commit's outcome).
  const long long server_connections = count(
      "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' "
      "AND datname = current_database() AND application_name <> 'archive-test'");
  lock.release();

  for (auto& reply : replies) {
    ParsedReply r;
    parse_reply(reply.get(), r);
    REQUIRE(r.items.size() == static_cast<std::size_t>(n));
    check_buys(r.items, n - 1);
  }
  CHECK(while_busy >= 1);
  CHECK(while_busy <= 2);
  CHECK(server_connections <= 2 + 4);
  CHECK(archive_connections() <= 2);
  CHECK(counter(admin, "exchange_archive_queries_total") == clients);
  CHECK(server.stop() == 0);
  CHECK(eventually([] { return archive_connections() == 0; }, std::chrono::seconds(5)));
}

TEST_CASE("archive: lookups beyond the waiting bound are answered 'Server busy'",
          "[e2e][archive]") {
  const unsigned short admin = free_port();
  ServerProcess server({"--concurrency", "per-request", "--reset", "--closed-orders-cached", "0",
                        "--archive-connections", "1", "--db-timeout-ms", "60000", "--admin-port",
                        std::to_string(admin)});
  Book book = archived_book(server.port(), 6);
  forget_closed(server.port(), book);
  // One connection: one lookup runs, 64 wait, the rest are refused at once.
  const int waiting = 64, refused = 5;
  const std::string request = transactions(
      kBuyer, queries({book.buys[0]}) + "<order sym=\"ARC\" amount=\"1\" limit=\"1\"/>");

  OrdersLock lock;
  std::vector<std::future<std::string>> replies;
  auto send = [&] {
    replies.push_back(
        std::async(std::launch::async, [&] { return send_request(server.port(), request); }));
  };
  send();
  REQUIRE(eventually([] { return blocked_readers() >= 1; }));
  for (int c = 0; c < waiting + refused; ++c) send();
  CHECK(eventually([&] {
    return scrape(admin, "exchange_archive_waiting") == waiting &&
           scrape(admin, "exchange_archive_refused_total") == refused;
  }));
  // The refused are answered while the lock still holds the others.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  int busy = 0;
  for (auto& reply : replies)
    if (reply.wait_until(deadline) == std::future_status::ready) {
      ParsedReply r;
      parse_reply(reply.get(), r);
      REQUIRE(r.items.size() == 2);
      CHECK(std::string(r.items[0].name()) == "error");
      const std::string why = r.items[0].text().get();
      CHECK(why.rfind("Server busy: too many archived-order lookups waiting", 0) == 0);
      CHECK(why.find("--archive-connections") != std::string::npos);
      // The rest of the request is served: the order is placed.
      CHECK(std::string(r.items[1].name()) == "opened");
      ++busy;
    }
  lock.release();
  CHECK(busy == refused);
  int found = 0;
  for (auto& reply : replies) {
    if (!reply.valid()) continue;  // answered busy above
    ParsedReply r;
    parse_reply(reply.get(), r);
    REQUIRE(r.items.size() == 2);
    CHECK(status_of(r.items[0]) == Status{"executed 2@2", "executed 1@2"});
    ++found;
  }
  CHECK(found == 1 + waiting);
  CHECK(counter(admin, "exchange_archive_refused_total") == refused);
  CHECK(server.stop() == 0);
}

TEST_CASE("archive: a broken archive connection is replaced", "[e2e][archive]") {
  ServerProcess server({"--concurrency", "pool", "--reset", "--closed-orders-cached", "0",
                        "--archive-connections", "1"});
  Book book = archived_book(server.port(), 7);
  forget_closed(server.port(), book);
  const std::string request = transactions(kBuyer, queries(book.buys));
  auto check_reply = [&] {
    ParsedReply r;
    parse_reply(send_request(server.port(), request), r);
    REQUIRE(r.items.size() == 7);
    check_buys(r.items, 6);
  };
  check_reply();
  const std::string pid_sql =
      "SELECT coalesce(string_agg(pid::text, ','), '') FROM pg_stat_activity "
      "WHERE application_name = 'exchange-archive'";
  const std::string first = value_now(pid_sql);
  REQUIRE(archive_connections() == 1);
  // PostgreSQL ends the idle connection (a restart, an administrator, idle_session_timeout).
  value_now("SELECT pg_terminate_backend(" + first + ")");
  REQUIRE(eventually([] { return archive_connections() == 0; }));

  check_reply();  // on a fresh connection, not an error
  CHECK(archive_connections() == 1);
  CHECK(value_now(pid_sql) != first);
  CHECK(server.stop() == 0);
}

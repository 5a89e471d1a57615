// protocol::reject_text, the one table from reject reason to protocol text: every reason has
// its text, each text is its own, and each reads exactly as clients, tests and docs expect.
#include "protocol/reject_text.hpp"

#include <set>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "support/decimal.hpp"
#include "support/reject.hpp"

using market::Reason;
using market::Reject;
using testing_support::dec;

namespace {

struct Case {
  Reject reject;
  std::string text;
};

Reject with_name(Reason reason, std::string name, std::string parent = {}) {
  Reject r(reason);
  r.name = std::move(name);
  r.parent = std::move(parent);
  return r;
}

Reject with_numbers(Reason reason, std::size_t count, std::size_t limit, std::size_t offset = 0) {
  Reject r(reason);
  r.count = count;
  r.limit = limit;
  r.offset = offset;
  return r;
}

// One sample of every reason, with the details its text reads, and that text as it must read.
std::vector<Case> every_reason() {
  std::vector<Case> cases;
  auto add = [&](Reject r, std::string text) { cases.push_back({std::move(r), std::move(text)}); };
  add(Reject(Reason::NotUtf8), "Request is not valid UTF-8");
  add(with_numbers(Reason::ControlCharacter, 1, 0, 17),
      "Malformed XML: control character 1 at offset 17");
  add(with_numbers(Reason::NonCharacter, 0, 0, 3),
      "Malformed XML: non-character U+FFFE/U+FFFF at offset 3");
  add(with_numbers(Reason::ForbiddenCharacterReference, 0, 0, 9),
      "Malformed XML: character reference to a character XML does not allow at offset 9");
  Reject syntax = with_numbers(Reason::XmlSyntax, 0, 0, 42);
  syntax.value = "Start-end tags mismatch";
  add(syntax, "Malformed XML: Start-end tags mismatch at offset 42");
  add(Reject(Reason::TextOutsideRoot), "Malformed XML: text outside the root element");
  add(Reject(Reason::SeveralRoots), "Malformed XML: more than one root element");
  add(Reject(Reason::NoRoot), "Malformed XML: no root element");
  add(Reject(Reason::RepeatedAttribute), "Malformed XML: repeated attribute");
  Reject attributes = with_name(Reason::TooManyAttributes, "account");
  attributes.limit = 16;
  add(attributes, "Request refused: more than 16 attributes on <account> (--max-attributes)");
  add(with_numbers(Reason::IdTooLong, 33, 32),
      "Request refused: an id of 33 characters is longer than 32 (--max-id-length)");
  add(with_numbers(Reason::SymbolTooLong, 40, 32),
      "Request refused: a symbol of 40 characters is longer than 32 (--max-symbol-length)");
  Reject children = with_name(Reason::TooManyChildren, "create");
  children.limit = 10000;
  add(children,
      "Request refused: more than 10000 children in <create> (each <account> of a <symbol> "
      "counts too); split it into smaller requests");
  add(with_name(Reason::UnknownRoot, "foo"),
      "Unknown root element <foo>: expected <create> or <transactions>");
  add(Reject(Reason::NoTransactionChildren), "<transactions> needs at least one child");

  add(with_name(Reason::UnknownElement, "bogus", "create"), "Unknown element <bogus> in <create>");
  add(with_name(Reason::ElementInsideText, "b", "account"),
      "Unexpected element <b> inside <account>");
  add(with_name(Reason::MissingAttribute, "balance"), "Missing attribute 'balance'");
  add(Reject(Reason::InvalidAccountId), "Invalid account id: must be one or more decimal digits");
  add(Reject(Reason::InvalidSymbol),
      "Invalid symbol name: must be one or more ASCII letters or digits");
  Reject order_id(Reason::InvalidOrderId);
  order_id.value = "x1";
  add(order_id, "Invalid order id: 'x1'");
  add(with_name(Reason::EmptyNumber, "balance"), "Invalid balance: empty number");
  Reject nan = with_name(Reason::NotANumber, "limit");
  nan.value = "1e3";
  add(nan, "Invalid limit: not a decimal number: '1e3'");
  add(with_name(Reason::NumberTooLarge, "amount"),
      "Invalid amount: number too large (at most 12 integer digits)");
  add(with_name(Reason::NumberTooPrecise, "amount"),
      "Invalid amount: too many fractional digits (at most 6)");
  add(Reject(Reason::NegativeBalance), "Invalid balance: must not be negative");
  add(Reject(Reason::NonPositiveShares), "Invalid amount: must be positive");
  add(Reject(Reason::ZeroAmount), "Invalid amount: must not be zero");
  add(Reject(Reason::NonPositiveLimit), "Invalid limit: must be positive");
  add(Reject(Reason::SymbolWithoutAccounts), "<symbol> needs at least one <account> child");

  add(Reject(Reason::AccountExists), "Account already exists");
  add(Reject(Reason::UnknownAccount), "Unknown account");
  add(Reject(Reason::UnknownSymbol), "Unknown symbol");
  Reject funds(Reason::InsufficientFunds);
  funds.needed = dec("100010");
  funds.held = dec("100000.5");
  add(funds, "Insufficient funds: order needs 100010, balance is 100000.5");
  Reject shares(Reason::InsufficientShares);
  shares.needed = dec("2000.000001");
  shares.held = dec("0");
  add(shares, "Insufficient shares: order sells 2000.000001, position is 0");
  add(Reject(Reason::NoSuchOrder), "No such order for this account");
  add(Reject(Reason::NothingToCancel), "Order has nothing open to cancel");

  add(with_numbers(Reason::TooManyAccounts, 0, 1000000),
      "Too many accounts: the exchange holds 1000000 (--max-accounts)");
  Reject tif(Reason::InvalidTif);
  tif.value = "DAY";
  add(tif, "Invalid tif: must be GTC, IOC or FOK");
  add(Reject(Reason::MarketWithoutTif),
      "Invalid order: a market order (no limit) needs tif IOC or FOK");
  add(Reject(Reason::StopWithoutGtc), "Invalid order: a stop order's tif must be GTC");
  add(Reject(Reason::NonPositiveStop), "Invalid stop: must be positive");
  add(Reject(Reason::NonPositiveNewShares), "Invalid shares: must be positive");
  add(Reject(Reason::NothingToReplace), "Order has nothing open to replace");
  add(Reject(Reason::StopNotTriggered),
      "Order is a stop that has not triggered: cancel it and place a new one");
  add(Reject(Reason::FillOrKillUnfilled),
      "Fill or kill: the book cannot fill the whole amount at once within the limit; nothing "
      "was applied");
  add(with_numbers(Reason::TooManySymbols, 0, 10000),
      "Too many symbols: the exchange holds 10000 (--max-symbols)");
  add(with_numbers(Reason::TooManyExecutions, 0, 10000),
      "Order refused: one request may execute against at most 10000 resting orders, each stop "
      "it triggers counting as one more (--max-executions-per-request), and this order needs "
      "more; place a smaller amount or split the request");
  add(with_numbers(Reason::TooManyOpenOrders, 0, 2000000),
      "Too many open orders on the exchange: 2000000 (--max-open-orders); retry later");
  add(with_numbers(Reason::TooManyOpenOrdersForAccount, 0, 10000),
      "Too many open orders for this account: 10000 (--max-open-orders-per-account); cancel "
      "some first");
  Reject reply = with_numbers(Reason::ReplyTooLarge, 700, 4194304);
  reply.ratio = 64;
  reply.allowance = 65536;
  add(reply,
      "Reply too large: this order's 700 executions would take the reply past its budget (64 "
      "times the request, at least 65536 and at most 4194304 bytes: --max-reply-ratio, "
      "--max-reply-bytes); ask for fewer orders per request");
  add(with_numbers(Reason::ArchiveBusy, 4, 32),
      "Server busy: too many archived-order lookups waiting (at most 32 may wait per "
      "connection, and --archive-connections is 4); retry");
  add(Reject(Reason::ArchiveFailed),
      "Internal error: the order could not be read from the database; retry");
  Reject account(Reason::NotPermittedAccount);
  account.name = "desk-a";
  account.value = "1003";
  add(account, "Not permitted: principal 'desk-a' may not act for account '1003'");
  Reject trade(Reason::NotPermittedTrade);
  trade.name = "ops";
  add(trade, "Not permitted: principal 'ops' has no trade role");
  Reject create(Reason::NotPermittedCreate);
  create.name = "desk-a";
  add(create,
      "Not permitted: <create> needs the admin role, which principal 'desk-a' does not have");
  Reject gone(Reason::UnknownPrincipal);
  gone.name = "bot-7";
  add(gone, "Not permitted: principal 'bot-7' is not in the principals file");
  Reject ended(Reason::SessionEnded);
  ended.name = "bot-7";
  add(ended,
      "Not authenticated: principal 'bot-7' changed in the principals file since this session "
      "logged on; log on again");
  add(Reject(Reason::RefusedByLiveRun), "refused by the live run");
  return cases;
}

}  // namespace

TEST_CASE("every reason has its own text, worded as clients expect", "[protocol][reject]") {
  const std::vector<Case> cases = every_reason();
  std::set<Reason> covered;
  std::set<std::string> texts;
  for (const Case& c : cases) {
    INFO("reason " << static_cast<int>(c.reject.reason));
    CHECK(covered.insert(c.reject.reason).second);  // one sample per reason
    const std::string text = protocol::reject_text(c.reject);
    CHECK_FALSE(text.empty());
    CHECK(text == c.text);
    CHECK(texts.insert(text).second);  // no two reasons read alike
  }
  // Every reason of the enum, up to the last (market/reject.hpp), has its sample above.
  CHECK(cases.size() == market::kReasonCount);
  for (std::size_t i = 0; i < market::kReasonCount; ++i) {
    const auto reason = static_cast<Reason>(i);
    INFO("reason " << i);
    CHECK(covered.count(reason) == 1);
    // Without its details a text still says something.
    CHECK_FALSE(protocol::reject_text(Reject(reason)).empty());
  }
}

TEST_CASE("a missing attribute names its element only where the reply needs it",
          "[protocol][reject]") {
  CHECK(protocol::reject_text(with_name(Reason::MissingAttribute, "id", "transactions")) ==
        "Missing attribute 'id' on <transactions>");
  Reject children = with_name(Reason::TooManyChildren, "transactions");
  children.limit = 3;
  CHECK(protocol::reject_text(children) ==
        "Request refused: more than 3 children in <transactions>; split it into smaller "
        "requests");
}

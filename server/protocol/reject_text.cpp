#include "protocol/reject_text.hpp"

namespace protocol {
namespace {

using market::Reason;

std::string number(std::size_t n) { return std::to_string(n); }
std::string element(const std::string& name) { return "<" + name + ">"; }

}  // namespace

std::string reject_text(const market::Reject& r) {
  switch (r.reason) {
    case Reason::NotUtf8:
      return "Request is not valid UTF-8";
    case Reason::ControlCharacter:
      return "Malformed XML: control character " + number(r.count) + " at offset " +
             number(r.offset);
    case Reason::NonCharacter:
      return "Malformed XML: non-character U+FFFE/U+FFFF at offset " + number(r.offset);
    case Reason::ForbiddenCharacterReference:
      return "Malformed XML: character reference to a character XML does not allow at offset " +
             number(r.offset);
    case Reason::XmlSyntax:
      return "Malformed XML: " + r.value + " at offset " + number(r.offset);
    case Reason::TextOutsideRoot:
      return "Malformed XML: text outside the root element";
    case Reason::SeveralRoots:
      return "Malformed XML: more than one root element";
    case Reason::NoRoot:
      return "Malformed XML: no root element";
    case Reason::RepeatedAttribute:
      return "Malformed XML: repeated attribute";
    case Reason::TooManyAttributes:
      return "Request refused: more than " + number(r.limit) + " attributes on " + element(r.name) +
             " (--max-attributes)";
    case Reason::IdTooLong:
      return "Request refused: an id of " + number(r.count) + " characters is longer than " +
             number(r.limit) + " (--max-id-length)";
    case Reason::SymbolTooLong:
      return "Request refused: a symbol of " + number(r.count) + " characters is longer than " +
             number(r.limit) + " (--max-symbol-length)";
    case Reason::TooManyChildren:
      return "Request refused: more than " + number(r.limit) + " children in " + element(r.name) +
             (r.name == "create" ? " (each <account> of a <symbol> counts too)" : "") +
             "; split it into smaller requests";
    case Reason::UnknownRoot:
      return "Unknown root element " + element(r.name) + ": expected <create> or <transactions>";
    case Reason::NoTransactionChildren:
      return "<transactions> needs at least one child";

    case Reason::UnknownElement:
      return "Unknown element " + element(r.name) + " in " + element(r.parent);
    case Reason::ElementInsideText:
      return "Unexpected element " + element(r.name) + " inside " + element(r.parent);
    case Reason::MissingAttribute:
      return "Missing attribute '" + r.name + "'" +
             (r.parent.empty() ? "" : " on " + element(r.parent));
    case Reason::InvalidAccountId:
      return "Invalid account id: must be one or more decimal digits";
    case Reason::InvalidSymbol:
      return "Invalid symbol name: must be one or more ASCII letters or digits";
    case Reason::InvalidOrderId:
      return "Invalid order id: '" + r.value + "'";
    case Reason::EmptyNumber:
      return "Invalid " + r.name + ": empty number";
    case Reason::NotANumber:
      return "Invalid " + r.name + ": not a decimal number: '" + r.value + "'";
    case Reason::NumberTooLarge:
      return "Invalid " + r.name + ": number too large (at most " +
             number(market::Decimal::kMaxIntegerDigits) + " integer digits)";
    case Reason::NumberTooPrecise:
      return "Invalid " + r.name + ": too many fractional digits (at most " +
             number(market::Decimal::kMaxInputFractionDigits) + ")";
    case Reason::NegativeBalance:
      return "Invalid balance: must not be negative";
    case Reason::NonPositiveShares:
      return "Invalid amount: must be positive";
    case Reason::ZeroAmount:
      return "Invalid amount: must not be zero";
    case Reason::NonPositiveLimit:
      return "Invalid limit: must be positive";
    case Reason::SymbolWithoutAccounts:
      return "<symbol> needs at least one <account> child";
    case Reason::InvalidTif:
      return "Invalid tif: must be GTC, IOC or FOK";
    case Reason::MarketWithoutTif:
      return "Invalid order: a market order (no limit) needs tif IOC or FOK";
    case Reason::StopWithoutGtc:
      return "Invalid order: a stop order's tif must be GTC";
    case Reason::NonPositiveStop:
      return "Invalid stop: must be positive";
    case Reason::NonPositiveNewShares:
      return "Invalid shares: must be positive";

    case Reason::AccountExists:
      return "Account already exists";
    case Reason::UnknownAccount:
      return "Unknown account";
    case Reason::UnknownSymbol:
      return "Unknown symbol";
    case Reason::InsufficientFunds:
      return "Insufficient funds: order needs " + r.needed.to_string() + ", balance is " +
             r.held.to_string();
    case Reason::InsufficientShares:
      return "Insufficient shares: order sells " + r.needed.to_string() + ", position is " +
             r.held.to_string();
    case Reason::NoSuchOrder:
      return "No such order for this account";
    case Reason::NothingToCancel:
      return "Order has nothing open to cancel";
    case Reason::NothingToReplace:
      return "Order has nothing open to replace";
    case Reason::StopNotTriggered:
      return "Order is a stop that has not triggered: cancel it and place a new one";
    case Reason::FillOrKillUnfilled:
      return "Fill or kill: the book cannot fill the whole amount at once within the limit; "
             "nothing was applied";

    case Reason::TooManyAccounts:
      return "Too many accounts: the exchange holds " + number(r.limit) + " (--max-accounts)";
    case Reason::TooManySymbols:
      return "Too many symbols: the exchange holds " + number(r.limit) + " (--max-symbols)";
    case Reason::TooManyExecutions:
      return "Order refused: one request may execute against at most " + number(r.limit) +
             " resting orders, each stop it triggers counting as one more "
             "(--max-executions-per-request), and this order needs more; place a smaller "
             "amount or split the request";
    case Reason::TooManyOpenOrders:
      return "Too many open orders on the exchange: " + number(r.limit) +
             " (--max-open-orders); retry later";
    case Reason::TooManyOpenOrdersForAccount:
      return "Too many open orders for this account: " + number(r.limit) +
             " (--max-open-orders-per-account); cancel some first";
    case Reason::ReplyTooLarge:
      return "Reply too large: this order's " + number(r.count) +
             " executions would take the reply past its budget (" + number(r.ratio) +
             " times the request, at least " + number(r.allowance) + " and at most " +
             number(r.limit) +
             " bytes: --max-reply-ratio, --max-reply-bytes); ask for fewer orders per request";
    case Reason::ArchiveBusy:
      return "Server busy: too many archived-order lookups waiting (at most " + number(r.limit) +
             " may wait per connection, and --archive-connections is " + number(r.count) +
             "); retry";
    case Reason::ArchiveFailed:
      return "Internal error: the order could not be read from the database; retry";
    case Reason::NotPermittedAccount:
      return "Not permitted: principal '" + r.name + "' may not act for account '" + r.value + "'";
    case Reason::NotPermittedTrade:
      return "Not permitted: principal '" + r.name + "' has no trade role";
    case Reason::NotPermittedCreate:
      return "Not permitted: <create> needs the admin role, which principal '" + r.name +
             "' does not have";
    case Reason::UnknownPrincipal:
      return "Not permitted: principal '" + r.name + "' is not in the principals file";
    case Reason::SessionEnded:
      return "Not authenticated: principal '" + r.name +
             "' changed in the principals file since this session logged on; log on again";
    case Reason::RefusedByLiveRun:
      return "refused by the live run";
  }
  // Only a value outside the enum gets here (every reason has its case above).
  return "Internal error: the request failed; query your orders before retrying";
}

}  // namespace protocol

#pragma once
// Why a request, or one child of it, is refused: one enum of every reason, whichever layer
// checks the rule, and the few details its text needs. The texts themselves are the protocol's
// (protocol/reject_text.cpp, one table); nothing here formats anything.
//
// It lives in the bottom layer so that every producer sees the same type without a mapping
// between enums: the engine and Decimal::parse (market/), the parser (protocol/), admission
// (gates/) and the archive (app/). Market code only produces its own reasons (the state rules, and
// the number rules of Decimal::parse); the others are names here, not code that knows XML
// (docs/ARCHITECTURE.md, "Rejects").
//
// Each rule is checked in one place. Value rules (names, numbers, signs) are the parser's; the
// engine takes values that passed them as preconditions (market/engine.hpp) and checks only
// what depends on its state.
#include <cstddef>
#include <cstdint>
#include <string>

#include "market/decimal.hpp"

namespace market {

// After a reason, the details (fields of Reject) its text reads; a reason without a comment
// needs none.
enum class Reason : std::uint8_t {
  // The whole request (parser): nothing of it is applied.
  NotUtf8,
  ControlCharacter,             // count: the character's code; offset
  NonCharacter,                 // offset (of a U+FFFE or U+FFFF)
  ForbiddenCharacterReference,  // offset
  XmlSyntax,                    // value: the XML parser's description; offset
  TextOutsideRoot,
  SeveralRoots,
  NoRoot,
  RepeatedAttribute,
  TooManyAttributes,  // name: the element; limit (--max-attributes)
  IdTooLong,          // count: its length; limit (--max-id-length)
  SymbolTooLong,      // count: its length; limit (--max-symbol-length)
  TooManyChildren,    // name: the root element; limit (--max-children)
  UnknownRoot,        // name
  NoTransactionChildren,

  // One child (parser): the value rules.
  UnknownElement,     // name; parent
  ElementInsideText,  // name; parent (an element where only text belongs)
  MissingAttribute,   // name: the attribute; parent: its element, when the text names it
  InvalidAccountId,
  InvalidSymbol,
  InvalidOrderId,    // value
  EmptyNumber,       // name: the field (balance, amount or limit)
  NotANumber,        // name: the field; value
  NumberTooLarge,    // name: the field
  NumberTooPrecise,  // name: the field
  NegativeBalance,
  NonPositiveShares,
  ZeroAmount,
  NonPositiveLimit,
  SymbolWithoutAccounts,
  InvalidTif,        // value
  MarketWithoutTif,  // a market order (no limit) without IOC or FOK
  StopWithoutGtc,    // a stop order with tif IOC or FOK
  NonPositiveStop,
  NonPositiveNewShares,  // a <replace>'s shares

  // One child (the engine; app for the acting account and archived orders): state rules.
  AccountExists,
  UnknownAccount,
  UnknownSymbol,
  InsufficientFunds,   // needed: the order's cost; held: the account's cash
  InsufficientShares,  // needed: the shares it sells; held: the position
  NoSuchOrder,         // not the account's, or no order at all: the text does not tell which
  NothingToCancel,
  NothingToReplace,
  StopNotTriggered,    // a <replace> of a stop that still waits
  FillOrKillUnfilled,  // a FOK the book cannot fill at once

  // One child (app: admission and the order archive): limits and availability.
  TooManyAccounts,              // limit (--max-accounts)
  TooManySymbols,               // limit (--max-symbols)
  TooManyExecutions,            // limit (--max-executions-per-request)
  TooManyOpenOrders,            // limit (--max-open-orders)
  TooManyOpenOrdersForAccount,  // limit (--max-open-orders-per-account)
  // count: the order's executions; the reply budget: ratio (--max-reply-ratio), allowance (the
  // bytes always allowed), limit (--max-reply-bytes)
  ReplyTooLarge,
  ArchiveBusy,  // limit: lookups that may wait per connection; count: --archive-connections
  ArchiveFailed,
  // Every child of a request (app: authorization, before anything is journaled).
  NotPermittedAccount,  // name: the principal; value: the account it does not hold
  NotPermittedTrade,    // name: the principal (it lacks the trade role)
  NotPermittedCreate,   // name: the principal (it lacks the admin role)
  UnknownPrincipal,     // name: the principal, no longer in the principals file
  SessionEnded,         // name: the principal, whose key changed or who was removed since the logon

  RefusedByLiveRun,  // a replay: the live run refused it (its reply is never sent)
};

// Keep RefusedByLiveRun last: the unit tests walk every reason up to it.
inline constexpr std::size_t kReasonCount = static_cast<std::size_t>(Reason::RefusedByLiveRun) + 1;

struct Reject {
  explicit Reject(Reason r) : reason(r) {}

  Reason reason;
  // Details: a text reads only those its reason's comment names.
  std::string name;    // an element, attribute or field
  std::string parent;  // the element `name` belongs to
  std::string value;   // what the request wrote (echoed), or the XML parser's own description
  std::size_t count = 0;
  std::size_t limit = 0;
  std::size_t offset = 0;  // in the request's bytes
  std::size_t ratio = 0;
  std::size_t allowance = 0;
  Decimal needed;
  Decimal held;
};

}  // namespace market

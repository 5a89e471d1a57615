#pragma once
// Rows for PostgreSQL's COPY, in its text format, written straight into one block and handed to
// libpqxx's stream_to whole.
//
// Why not stream_to's own `copy << std::make_tuple(...)`: libpqxx 6.4 turns every field into a
// string of its own, runs an escaping pass over each, joins them into a row string and sends
// each row with its own copy, microseconds an order on the projector's thread
// (docs/notes/performance-history.md, "Per-order CPU budget, before and after issue 21"). Here a
// field is appended in place and escaped only where it holds a character COPY's text format treats
// specially (the projection's text fields, account ids and symbols, never do: the parser and the
// tables' CHECKs hold them to digits and letters).
//
// stream_to has no public call for text that is already formatted, so a CopyText::Block goes
// in as a one-field row whose "escaping" (the specialisation at the end of this file) is the
// block itself: stream_to then sends it followed by one newline, which ends its last row.
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <tuple>

#include <pqxx/stream_to>
#include <pqxx/version>

#include "market/decimal.hpp"

static_assert(PQXX_VERSION_MAJOR == 6,
              "store/copy_text.hpp relies on libpqxx 6's stream_to; check it against this version");

namespace store {

// Appends an array literal of integers, "{7,9}", from the `second` of each element of
// [first, last): the same text in COPY's format and as an element of an array parameter.
template <typename It>
void append_int_array(std::string& text, It first, It last) {
  text += '{';
  char digits[24];
  for (It it = first; it != last; ++it) {
    if (it != first) text += ',';
    const std::int64_t value = it->second;
    text.append(digits, std::to_chars(digits, digits + sizeof digits, value).ptr);
  }
  text += '}';
}

class CopyText {
 public:
  // The rows so far, without the newline that ends the last one (stream_to adds it).
  struct Block {
    std::string_view text;
  };

  CopyText& field(std::int64_t value) {
    separate();
    char digits[24];
    const auto end = std::to_chars(digits, digits + sizeof digits, value).ptr;
    text_.append(digits, end);
    return *this;
  }
  CopyText& field(const market::Decimal& value) {
    separate();
    text_ += value.to_string();
    return *this;
  }
  CopyText& field(std::string_view value) {
    separate();
    if (value.find_first_of("\\\t\n\r") == std::string_view::npos) {
      text_ += value;
      return *this;
    }
    for (char c : value) {
      switch (c) {
        case '\\':
          text_ += "\\\\";
          break;
        case '\t':
          text_ += "\\t";
          break;
        case '\n':
          text_ += "\\n";
          break;
        case '\r':
          text_ += "\\r";
          break;
        default:
          text_ += c;
      }
    }
    return *this;
  }
  // An array of integers, "{7,9}", from the `second` of each element of [first, last).
  template <typename It>
  CopyText& array_field(It first, It last) {
    separate();
    append_int_array(text_, first, last);
    return *this;
  }
  CopyText& null() {
    separate();
    text_ += "\\N";
    return *this;
  }
  void end_row() {
    text_ += '\n';
    first_field_ = true;
    ++rows_;
  }

  std::size_t rows() const { return rows_; }
  // The rows so far as COPY text, each ended by a newline (send() hands over all but the last).
  const std::string& text() const { return text_; }

  // Sends the complete rows so far into `copy` and starts again empty.
  void send(pqxx::stream_to& copy) {
    if (rows_ == 0) return;
    text_.pop_back();  // the last row's newline: stream_to ends the block with one
    copy << std::make_tuple(Block{text_});
    text_.clear();
    rows_ = 0;
  }

 private:
  void separate() {
    if (!first_field_) text_ += '\t';
    first_field_ = false;
  }

  std::string text_;
  bool first_field_ = true;
  std::size_t rows_ = 0;
};

}  // namespace store

// A Block is COPY text already: stream_to's escaping leaves it as it is.
template <>
inline std::string pqxx::internal::TypedCopyEscaper::operator()<store::CopyText::Block>(
    const store::CopyText::Block* block) const {
  return std::string(block->text);
}

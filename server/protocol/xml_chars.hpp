#pragma once
// XML 1.0 allows only some characters, whether written raw or as a character reference
// (&#...;). pugixml decodes references without checking them, so a request could smuggle a
// NUL (which cuts a string short) or a control character into a value we echo, and the reply
// would not be well-formed XML. This check runs on the raw payload before parsing, unless
// plain_ascii_text shows it cannot find anything.
#include <cstdint>
#include <optional>
#include <string_view>

#include "market/reject.hpp"

namespace protocol {

inline bool is_xml_char(std::uint32_t c) {
  return c == 0x9 || c == 0xA || c == 0xD || (c >= 0x20 && c <= 0xD7FF) ||
         (c >= 0xE000 && c <= 0xFFFD) || (c >= 0x10000 && c <= 0x10FFFF);
}

// True if `s` holds only printable ASCII, tabs, newlines and carriage returns, and no character
// reference: then it is valid UTF-8 and forbidden_xml_char finds nothing, so parse() may skip
// both checks. Nearly every request is such text; this pass has no branch per byte (the
// compiler vectorises it) where the two checks cost about 0.3 us a request.
inline bool plain_ascii_text(std::string_view s) {
  unsigned outside = 0;
  for (unsigned char c : s) {
    const unsigned not_printable = static_cast<unsigned>(c - 0x20u) >= 0x5Fu;  // < 0x20, >= 0x7F
    const unsigned space = static_cast<unsigned>(c == '\t') | static_cast<unsigned>(c == '\n') |
                           static_cast<unsigned>(c == '\r');
    outside |= not_printable & ~space;
  }
  return outside == 0 && s.find("&#") == std::string_view::npos;
}

// Nothing if every character and character reference is allowed, else the first that is not
// (ControlCharacter, NonCharacter or ForbiddenCharacterReference, with its offset). Expects
// valid UTF-8 (checked first).
inline std::optional<market::Reject> forbidden_xml_char(std::string_view s) {
  auto at = [](market::Reason reason, std::size_t offset) {
    market::Reject r(reason);
    r.offset = offset;
    return r;
  };
  for (std::size_t i = 0; i < s.size(); ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 && c != 0x9 && c != 0xA && c != 0xD) {
      market::Reject r = at(market::Reason::ControlCharacter, i);
      r.count = c;
      return r;
    }
    // U+FFFE and U+FFFF are EF BF BE / EF BF BF in UTF-8.
    if (c == 0xEF && i + 2 < s.size() && static_cast<unsigned char>(s[i + 1]) == 0xBF &&
        (static_cast<unsigned char>(s[i + 2]) & 0xFE) == 0xBE)
      return at(market::Reason::NonCharacter, i);
    if (c == '&' && i + 1 < s.size() && s[i + 1] == '#') {
      std::size_t j = i + 2;
      bool hex = j < s.size() && s[j] == 'x';
      if (hex) ++j;
      std::uint64_t value = 0;
      std::size_t digits = 0;
      for (; j < s.size() && s[j] != ';' && digits < 12; ++j, ++digits) {
        char d = s[j];
        int v = d >= '0' && d <= '9'          ? d - '0'
                : hex && d >= 'a' && d <= 'f' ? d - 'a' + 10
                : hex && d >= 'A' && d <= 'F' ? d - 'A' + 10
                                              : -1;
        if (v < 0) break;
        value = value * (hex ? 16 : 10) + static_cast<std::uint64_t>(v);
      }
      if (value > 0x10FFFF || !is_xml_char(static_cast<std::uint32_t>(value)))
        return at(market::Reason::ForbiddenCharacterReference, i);
    }
  }
  return std::nullopt;
}

}  // namespace protocol

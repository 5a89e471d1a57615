#include "wire/xml_escape.hpp"

namespace wire {

void append_xml_escaped(std::string& out, std::string_view text) {
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\t':
        out += "&#9;";
        break;
      case '\n':
        out += "&#10;";
        break;
      case '\r':
        out += "&#13;";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20)
          out += "\xEF\xBF\xBD";  // U+FFFD REPLACEMENT CHARACTER
        else
          out += c;
    }
  }
}

std::string xml_escaped(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  append_xml_escaped(out, text);
  return out;
}

}  // namespace wire

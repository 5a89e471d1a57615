#include "net/framing.hpp"

namespace exch::net {

std::string frame_request(std::string_view xml) {
  std::string out = std::to_string(xml.size());
  out.reserve(out.size() + 1 + xml.size());
  out += '\n';
  out.append(xml.data(), xml.size());
  return out;
}

std::string_view strip_length_line(std::string_view content) {
  std::size_t i = 0;
  while (i < content.size() && content[i] >= '0' && content[i] <= '9') ++i;
  if (i == 0) return content;
  std::size_t j = i;
  if (j < content.size() && content[j] == '\r') ++j;
  if (j >= content.size() || content[j] != '\n') return content;
  ++j;
  if (j >= content.size() || content[j] != '<') return content;
  return content.substr(j);
}

std::optional<std::size_t> parse_length_line(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.empty() || line.size() > 18) return std::nullopt;
  std::size_t value = 0;
  for (char c : line) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + static_cast<std::size_t>(c - '0');
  }
  return value;
}

std::string printable_excerpt(std::string_view bytes, std::size_t max_chars) {
  std::string out;
  bool space = false;
  for (char ch : bytes) {
    auto c = static_cast<unsigned char>(ch);
    if (c == '\n' || c == '\r' || c == '\t' || c == ' ') {
      space = !out.empty();
      continue;
    }
    if (space) {
      out += ' ';
      space = false;
    }
    if (c < 0x20 || c == 0x7f) {
      static const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
    if (out.size() >= max_chars) {
      out += "...";
      break;
    }
  }
  return out;
}

}  // namespace exch::net

#include "net/framing.hpp"

#include <algorithm>

#include "protocol/render.hpp"

namespace net {
namespace {
// 20 digits hold any 64-bit length; more is certainly not a length line.
constexpr std::size_t kMaxLengthLine = 24;
// The logon line (wire::kLogon, a name of at most 128 characters, a key).
constexpr std::size_t kMaxLogonLine = 512;
constexpr std::string_view kLogonWord = "EXCHANGE-LOGON";

// The bytes of a bad length line as they may appear in a reply: printable ASCII as is, anything
// else (control bytes, NUL, invalid UTF-8 from a TLS hello or a binary blob) as \xNN, so the
// error reply stays well-formed XML whatever the client sent.
std::string printable(std::string_view bytes) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (char c : bytes) {
    auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f) {
      out += c;
    } else {
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 0xf];
    }
  }
  return out;
}
}  // namespace

// Keeps the capacity of an ordinary buffer (one read) for the next request; more is freed.
constexpr std::size_t kKeptCapacity = 32 * 1024;

void FrameReader::feed(const char* data, std::size_t size) {
  // What was framed already goes first, so a client pipelining requests without pause (each
  // read ending inside the next request) does not grow the buffer for ever.
  if (pos_ == buf_.size()) {
    clear_buffer();
  } else if (pos_ > 0) {
    buf_.erase(0, pos_);
    pos_ = 0;
  }
  if (opening_ == Opening::LogonOrHello && buf_.size() + size > buf_.capacity()) {
    // A logon line may be arriving: growing must not leave a copy of its key in freed memory.
    std::string grown;
    grown.reserve(std::max(buf_.size() + size, 2 * buf_.capacity()));
    grown.assign(buf_);
    std::fill(buf_.begin(), buf_.end(), '\0');
    buf_.swap(grown);
  }
  buf_.append(data, size);
}

void FrameReader::discard() {
  clear_buffer();
  expected_ = kNone;
}

void FrameReader::clear_buffer() {
  // A logon line not yet taken (cut short: too long, the budget, a close) may hold a key.
  if (opening_ == Opening::LogonOrHello) std::fill(buf_.begin(), buf_.end(), '\0');
  if (buf_.capacity() > kKeptCapacity)
    std::string().swap(buf_);
  else
    buf_.clear();
  pos_ = 0;
}

FrameReader::Event FrameReader::take_line(std::string_view& line, std::string& out) {
  std::size_t nl = buf_.find('\n', pos_);
  // The logon line is longer than a length line may be; only the first line may be one.
  const bool maybe_logon = opening_ == Opening::LogonOrHello &&
                           std::string_view(buf_).substr(pos_, kLogonWord.size()) == kLogonWord;
  const std::size_t longest = maybe_logon ? kMaxLogonLine : kMaxLengthLine;
  if (nl == std::string::npos) {
    if (buf_.size() - pos_ <= longest) return Event::NeedMore;
    out = maybe_logon
              ? "Bad logon: the logon line is longer than " + std::to_string(longest) + " bytes"
              : "Bad framing: the first line must be the request's length in bytes";
    return Event::Error;
  }
  if (maybe_logon && nl - pos_ > longest) {
    out = "Bad logon: the logon line is longer than " + std::to_string(longest) + " bytes";
    return Event::Error;
  }
  line = std::string_view(buf_.data() + pos_, nl - pos_);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  pos_ = nl + 1;
  return Event::Request;
}

FrameReader::Event FrameReader::next(std::string& out) {
  if (expected_ == kNone) {
    std::string_view line;
    if (Event e = take_line(line, out); e != Event::Request) return e;
    const Opening opening = opening_;
    const bool logon = line.substr(0, kLogonWord.size()) == kLogonWord;
    opening_ = opening == Opening::LogonOrHello && logon ? Opening::Hello : Opening::Done;
    if (opening_ == Opening::Hello) {
      // The session checks the rest (the version, NAME and KEY) and answers the logon.
      out.assign(line.substr(kLogonWord.size()));
      // The line holds a key: wiped here, so no copy stays in the buffer (the session wipes
      // `out`, the driver its read buffer).
      const auto start = static_cast<std::size_t>(line.data() - buf_.data());
      std::fill(buf_.begin() + static_cast<std::ptrdiff_t>(start),
                buf_.begin() + static_cast<std::ptrdiff_t>(pos_), '\0');
      if (pos_ == buf_.size()) clear_buffer();
      return Event::Logon;
    }
    if (opening != Opening::Done && line == wire::kSessionHello) {
      if (pos_ == buf_.size()) clear_buffer();
      return Event::SessionHello;
    }
    if (logon) {
      // Never echoed: it may hold a key.
      out = "Bad logon: the logon line must be the connection's first line";
      return Event::Error;
    }
    if (line.empty() || line.find_first_not_of("0123456789") != line.npos) {
      out = "Bad framing: the first line must be the request's length in bytes, got '" +
            printable(line.substr(0, 40)) + "'";
      return Event::Error;
    }
    // Checked digit by digit before anything is allocated; saturates instead of overflowing.
    std::size_t length = 0;
    bool too_long = false;
    for (char c : line) {
      length = length * 10 + static_cast<std::size_t>(c - '0');
      if (length > max_bytes_) {
        too_long = true;
        break;
      }
    }
    if (too_long) {
      out = "Request of " + std::string(line) + " bytes exceeds the limit of " +
            std::to_string(max_bytes_) + " bytes";
      return Event::Error;
    }
    expected_ = length;
  }
  if (buf_.size() - pos_ < expected_) return Event::NeedMore;
  out.assign(buf_, pos_, expected_);
  pos_ += expected_;
  expected_ = kNone;
  if (pos_ == buf_.size()) clear_buffer();
  return Event::Request;
}

std::string frame_reply(std::string xml, bool persistent) {
  if (!persistent) return xml;
  return std::to_string(xml.size()) + "\n" + xml;
}

std::string framing_error_reply(const std::string& why) { return protocol::render_error(why); }

std::string server_busy_reply(std::size_t limit) {
  return framing_error_reply("Server busy: too many open connections (limit " +
                             std::to_string(limit) + ")");
}

}  // namespace net

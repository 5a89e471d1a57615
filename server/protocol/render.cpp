#include "protocol/render.hpp"

#include "protocol/reject_text.hpp"
#include "wire/xml_escape.hpp"

namespace protocol {
namespace {

// Attribute values and error texts echo client input, so each is escaped (wire/xml_escape.hpp).
void open_tag(std::string& out, const char* name, const Attributes& attrs) {
  out += '<';
  out += name;
  for (const auto& [key, value] : attrs) {
    out += ' ';
    out += key;
    out += "=\"";
    wire::append_xml_escaped(out, value);
    out += '"';
  }
}

void append_fills(std::string& out, const market::OrderStatus& s) {
  if (s.canceled_shares) {
    out += "    <canceled shares=\"" + s.canceled_shares->to_string() + "\" time=\"" +
           std::to_string(s.canceled_at) + "\"/>\n";
  }
  for (const market::Fill& f : s.fills) {
    out += "    <executed shares=\"" + f.shares.to_string() + "\" price=\"" + f.price.to_string() +
           "\" time=\"" + std::to_string(f.time) + "\"/>\n";
  }
}

void append_item(std::string& out, const ResultItem& item) {
  out += "  ";
  switch (item.kind) {
    case ResultItem::Kind::Created:
      open_tag(out, "created", item.attrs);
      out += "/>\n";
      break;
    case ResultItem::Kind::Opened:
      open_tag(out, "opened", item.attrs);
      out += "/>\n";
      break;
    case ResultItem::Kind::Replaced:
      open_tag(out, "replaced", item.attrs);
      out += "/>\n";
      break;
    case ResultItem::Kind::Error:
      open_tag(out, "error", item.attrs);
      out += '>';
      // An Error item always carries its reject; an empty <error> would still be well-formed.
      if (item.reject) wire::append_xml_escaped(out, reject_text(*item.reject));
      out += "</error>\n";
      break;
    case ResultItem::Kind::Status:
    case ResultItem::Kind::Canceled: {
      const char* name = item.kind == ResultItem::Kind::Status ? "status" : "canceled";
      open_tag(out, name, item.attrs);
      out += ">\n";
      const market::OrderStatus& s = item.status;
      if (item.kind == ResultItem::Kind::Status && s.stop && s.open.is_positive())
        out += "    <waiting shares=\"" + s.open.to_string() + "\" stop=\"" + s.stop->to_string() +
               "\"/>\n";
      else if (item.kind == ResultItem::Kind::Status && s.open.is_positive())
        out += "    <open shares=\"" + s.open.to_string() + "\"/>\n";
      append_fills(out, item.status);
      out += "  </";
      out += name;
      out += ">\n";
      break;
    }
  }
}

}  // namespace

std::string render_error(std::string_view text) {
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<results><error>";
  wire::append_xml_escaped(out, text);
  out += "</error></results>\n";
  return out;
}

std::string render(const Result& result) {
  if (result.error) return render_error(reject_text(*result.error));
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<results>\n";
  for (const ResultItem& item : result.items) append_item(out, item);
  out += "</results>\n";
  return out;
}

}  // namespace protocol

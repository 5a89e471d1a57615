// wire::xml_escaped, the one XML escape of the server's replies and the client's requests:
// each character that matters, and what a real XML parser reads back from the result.
#include "wire/xml_escape.hpp"

#include <string>

#include <catch2/catch.hpp>
#include <pugixml.hpp>

using wire::xml_escaped;

namespace {

const std::string kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// The text back from `escaped` written as a double-quoted attribute value and as element
// content; fails the test unless the document is well-formed.
struct ReadBack {
  std::string attribute, content;
};

ReadBack read_back(const std::string& escaped) {
  std::string doc = "<e a=\"" + escaped + "\">" + escaped + "</e>";
  pugi::xml_document d;
  // pugixml's defaults do what any conforming parser does: a raw tab, LF or CR in an attribute
  // value becomes a space, a raw CR LF in content becomes LF.
  auto ok = d.load_buffer(doc.data(), doc.size(), pugi::parse_default, pugi::encoding_utf8);
  INFO(doc);
  REQUIRE(ok);
  return {d.child("e").attribute("a").value(), d.child("e").text().get()};
}

}  // namespace

TEST_CASE("xml_escaped: markup characters become entity references", "[escape]") {
  CHECK(xml_escaped("&") == "&amp;");
  CHECK(xml_escaped("<") == "&lt;");
  CHECK(xml_escaped(">") == "&gt;");
  CHECK(xml_escaped("\"") == "&quot;");
  CHECK(xml_escaped("]]>") == "]]&gt;");
  CHECK(xml_escaped("&amp;") == "&amp;amp;");  // text, not markup: escaped again
  CHECK(xml_escaped("a<b>&\"c\"") == "a&lt;b&gt;&amp;&quot;c&quot;");
}

TEST_CASE("xml_escaped: an apostrophe stays, attributes being double-quoted", "[escape]") {
  CHECK(xml_escaped("it's") == "it's");
  CHECK(read_back(xml_escaped("it's")).attribute == "it's");
}

TEST_CASE("xml_escaped: tab, LF and CR become character references", "[escape]") {
  CHECK(xml_escaped("\t") == "&#9;");
  CHECK(xml_escaped("\n") == "&#10;");
  CHECK(xml_escaped("\r") == "&#13;");
  // Written raw, an attribute value reads back with spaces instead; as references they survive
  // both places exactly.
  CHECK(read_back("a\tb\nc").attribute == "a b c");
  const std::string text = "a\tb\nc\r\nd";
  ReadBack back = read_back(xml_escaped(text));
  CHECK(back.attribute == text);
  CHECK(back.content == text);
}

TEST_CASE("xml_escaped: other control characters become U+FFFD", "[escape]") {
  // XML 1.0 allows none of them, not even as &#1;: the replacement keeps the document
  // well-formed and shows that something was there.
  for (int c = 0; c < 0x20; ++c) {
    if (c == '\t' || c == '\n' || c == '\r') continue;
    INFO("control character " << c);
    std::string text = "a";
    text += static_cast<char>(c);
    text += "b";
    CHECK(xml_escaped(text) == "a" + kReplacement + "b");
    CHECK(read_back(xml_escaped(text)).attribute == "a" + kReplacement + "b");
  }
  CHECK(xml_escaped(std::string("\0", 1)) == kReplacement);
  CHECK(xml_escaped("\x7f") == "\x7f");  // DEL is an XML character
}

TEST_CASE("xml_escaped: everything else is copied, UTF-8 included", "[escape]") {
  CHECK(xml_escaped("") == "");
  CHECK(xml_escaped("SPY 125.50 id=7") == "SPY 125.50 id=7");
  CHECK(xml_escaped("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80") ==
        "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
  std::string out = "<x>";
  wire::append_xml_escaped(out, "<&>");
  CHECK(out == "<x>&lt;&amp;&gt;");
}

TEST_CASE("xml_escaped: every printable ASCII string reads back as itself", "[escape]") {
  std::string all;
  for (int c = 0x20; c < 0x7f; ++c) all += static_cast<char>(c);
  all += "\t\n\r";
  ReadBack back = read_back(xml_escaped(all));
  CHECK(back.attribute == all);
  CHECK(back.content == all);
}

#pragma once
// The one XML escape of both ends: the server's replies (server/protocol/render.cpp) and the
// client's requests and normalised replies (client/bench). Text in, XML character data out,
// fit for element content and for a double-quoted attribute value, that a conforming parser
// reads back as the same text:
//
//   &  <  >  "        &amp; &lt; &gt; &quot;  (markup; > also for "]]>" in content)
//   tab, LF, CR       &#9; &#10; &#13;  (written raw, a parser normalises them to a space in an
//                     attribute value, and CR LF to LF in content)
//   '                 as is: every attribute we write is quoted with "
//   other controls    U+FFFD (below 0x20: XML 1.0 allows them in no form, not even as a
//                     character reference, so the document would not be well-formed)
//
// Every other byte is copied: the text is expected to be UTF-8 (the server checks each request
// before parsing it, the client writes only what it generated).
#include <string>
#include <string_view>

namespace wire {

void append_xml_escaped(std::string& out, std::string_view text);
std::string xml_escaped(std::string_view text);

}  // namespace wire

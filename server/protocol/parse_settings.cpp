#include "protocol/parse_settings.hpp"

namespace protocol {

void declare_settings(util::Settings& s, ParseLimits& l) {
  const std::string group = "Request limits";
  s.add("max-children", group, &l.max_children)
      .at_least(1)
      .help(
          "most children of one <create> or <transactions> (each <symbol>'s children count "
          "too); a request with more is refused as a whole");
  s.add("max-id-length", group, &l.max_id_length)
      .at_least(1)
      .unit("characters")
      .help(
          "longest id attribute (account or order id); a request with a longer one is refused "
          "as a whole");
  s.add("max-symbol-length", group, &l.max_symbol_length)
      .at_least(1)
      .unit("characters")
      .help("longest sym attribute; a request with a longer one is refused as a whole");
  s.add("max-attributes", group, &l.max_attributes)
      .at_least(3)
      .help("most attributes on one element; a request with more is refused as a whole");
}

}  // namespace protocol

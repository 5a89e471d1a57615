#pragma once
// The settings protocol owns (util/settings.hpp): the shape limits of a request.
#include "protocol/parse.hpp"
#include "util/settings.hpp"

namespace protocol {

// --max-children, --max-id-length, --max-symbol-length, --max-attributes.
void declare_settings(util::Settings& settings, ParseLimits& limits);

}  // namespace protocol

#pragma once
#include <string>

#include "protocol/result.hpp"

namespace protocol {

// Result to the reply document: <?xml ...?><results>...</results>, UTF-8.
std::string render(const Result& result);

}  // namespace protocol

#pragma once
// The settings the request gates own (util/settings.hpp): what one request may cost and what
// clients may make the exchange hold (app::Limits, checked by app::Admission).
#include "gates/admission.hpp"
#include "util/settings.hpp"

namespace app {

// --max-accounts ... --max-reply-bytes.
void declare_settings(util::Settings& settings, Limits& limits);

}  // namespace app

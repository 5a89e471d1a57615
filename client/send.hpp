#pragma once

namespace exch {

// `exchange-client send FILE...`; argv[0] is "send". Returns the exit code.
int run_send(int argc, const char* const* argv);

}  // namespace exch

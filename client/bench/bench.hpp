#pragma once

namespace exch::bench {

// `exchange-client bench ...`; argv[0] is "bench". Returns the exit code.
int run_bench(int argc, const char* const* argv);

}  // namespace exch::bench

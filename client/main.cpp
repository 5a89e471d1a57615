// exchange-client: talks to the exchange server (PROTOCOL.md).
//   exchange-client send FILE.xml...   send requests, print replies
//   exchange-client bench [options]    load generator and statistics
//   exchange-client keygen NAME        a new API key and its principals-file line
#include <cstring>
#include <exception>
#include <iostream>

#include "bench/bench.hpp"
#include "keygen.hpp"
#include "send.hpp"

namespace {

void usage(std::ostream& os) {
  os << "usage: exchange-client send FILE.xml... [--host H] [--port P | --servers H:P,H:P] "
        "[--persistent]\n"
        "                          [--tls [--ca FILE] [--cert FILE --key FILE] "
        "[--tls-resume on|off]]\n"
        "                          [--principal NAME --api-key-file FILE]\n"
        "       exchange-client bench [options]   (the same TLS and logon flags)\n"
        "       exchange-client keygen NAME [--roles trade] [--accounts 1001,1002] "
        "[--key-out FILE]\n"
        "       exchange-client COMMAND --help\n";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    usage(std::cerr);
    return 2;
  }
  const char* command = argv[1];
  try {
    if (std::strcmp(command, "send") == 0) return exch::run_send(argc - 1, argv + 1);
    if (std::strcmp(command, "bench") == 0) return exch::bench::run_bench(argc - 1, argv + 1);
    if (std::strcmp(command, "keygen") == 0) return exch::run_keygen(argc - 1, argv + 1);
  } catch (const std::exception& e) {
    std::cerr << "exchange-client " << command << ": " << e.what() << "\n";
    return 1;
  }
  if (std::strcmp(command, "--help") == 0 || std::strcmp(command, "-h") == 0 ||
      std::strcmp(command, "help") == 0) {
    usage(std::cout);
    return 0;
  }
  std::cerr << "exchange-client: unknown command '" << command << "'\n";
  usage(std::cerr);
  return 2;
}

// exchange-client send: send XML files as requests, print the replies.
#include "send.hpp"

#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "connect_flags.hpp"
#include "net/failover.hpp"
#include "net/framing.hpp"

namespace po = boost::program_options;

namespace exch {

namespace {

po::options_description describe(std::string& host, unsigned& port, std::string& servers,
                                 double& failover_wait_s, bool& persistent, double& timeout_s,
                                 double& connect_timeout_s) {
  po::options_description d("exchange-client send FILE.xml... [options]");
  d.add_options()("host", po::value(&host)->default_value(host), "server host")(
      "port", po::value(&port)->default_value(port), "server port")(
      "servers", po::value(&servers),
      "HOST:PORT,HOST:PORT,...: an active server and its standbys; each request goes to the "
      "one that serves (--host/--port are then ignored). A request is sent to another server "
      "only when none can have applied it; one sent without a reply is reported as unknown "
      "(exit status 4), never resent")(
      "failover-wait", po::value(&failover_wait_s)->default_value(failover_wait_s),
      "with --servers: seconds to keep trying them in turn while none serves (a takeover)")(
      "persistent", po::bool_switch(&persistent),
      "send all files over one persistent session (\"EXCHANGE-SESSION 1\" extension) "
      "instead of one connection per file")(
      "timeout", po::value(&timeout_s)->default_value(timeout_s), "seconds a whole reply may take")(
      "connect-timeout", po::value(&connect_timeout_s)->default_value(connect_timeout_s),
      "seconds a TCP connect (and the TLS handshake) may take")("help,h", "this help");
  return d;
}

bool read_input(const std::string& name, std::string& out, std::string& error) {
  if (name == "-") {
    out.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
    return true;
  }
  std::ifstream in(name, std::ios::binary);
  if (!in) {
    error = "cannot read " + name;
    return false;
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  out = ss.str();
  return true;
}

}  // namespace

int run_send(int argc, const char* const* argv) {
  std::string host = "127.0.0.1";
  unsigned port = 12345;
  std::string servers;
  double failover_wait_s = 10;
  bool persistent = false;
  double timeout_s = 30, connect_timeout_s = 5;
  std::vector<std::string> files;
  SecurityFlags security;
  auto desc =
      describe(host, port, servers, failover_wait_s, persistent, timeout_s, connect_timeout_s);
  desc.add(security_options(security));
  po::options_description hidden;
  hidden.add_options()("file", po::value(&files));
  po::options_description all;
  all.add(desc).add(hidden);
  po::positional_options_description positional;
  positional.add("file", -1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(all).positional(positional).run(), vm);
    po::notify(vm);
  } catch (const std::exception& e) {
    std::cerr << "exchange-client send: " << e.what() << "\n";
    return 2;
  }
  if (vm.count("help")) {
    std::cout << "Sends each FILE (XML; '-' is stdin) as one request and prints each reply.\n"
                 "A length line is added; a file that already starts with one (digits,\n"
                 "newline, then '<') is sent with its length line recomputed. With several\n"
                 "files each reply is preceded by a line '== FILE'. Exit status: 0 when\n"
                 "every file got a reply without an <error>, 3 when every file got a reply\n"
                 "but some reply holds an <error> (a refused request or child), 4 when\n"
                 "some request was sent but got no reply (its outcome is unknown: query\n"
                 "before sending it again), 1 on connection/session errors or unreadable\n"
                 "files (or a --ca, --cert, --key or --api-key-file that cannot be\n"
                 "loaded), 2 on usage errors. With --principal every connection starts\n"
                 "with the key logon; a refused logon is reported as \"logon refused: ...\"\n"
                 "(nothing was applied).\n\n"
              << desc;
    return 0;
  }
  if (files.empty()) {
    std::cerr << "exchange-client send: no FILE given (see --help)\n";
    return 2;
  }
  if (port == 0 || port > 65535 || !(timeout_s > 0) || !(connect_timeout_s > 0) ||
      !(failover_wait_s >= 0)) {
    std::cerr << "exchange-client send: bad --port, timeout or --failover-wait\n";
    return 2;
  }
  if (std::string bad = check_security_flags(security); !bad.empty()) {
    std::cerr << "exchange-client send: " << bad << "\n";
    return 2;
  }
  net::Timeouts timeouts;
  timeouts.connect = std::chrono::milliseconds(static_cast<long long>(connect_timeout_s * 1000));
  timeouts.read = std::chrono::milliseconds(static_cast<long long>(timeout_s * 1000));
  net::ConnectOptions connect;
  try {
    connect = make_connect_options(security, timeouts);
  } catch (const std::exception& e) {
    std::cerr << "exchange-client send: " << e.what() << "\n";
    return 1;
  }

  std::vector<std::unique_ptr<net::Endpoint>> endpoints;
  try {
    if (servers.empty())
      endpoints.push_back(std::make_unique<net::Endpoint>(
          net::Endpoint::resolve(host, static_cast<std::uint16_t>(port))));
    else
      endpoints = net::resolve_servers(servers, static_cast<std::uint16_t>(port));
  } catch (const std::invalid_argument& e) {
    std::cerr << "exchange-client send: --servers: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "exchange-client send: " << e.what() << "\n";
    return 1;
  }
  net::Failover::Options options;
  options.connect = connect;
  options.persistent = persistent;
  // One server: one attempt, as without --servers. Several: a takeover may be under way.
  options.wait = endpoints.size() > 1
                     ? std::chrono::milliseconds(static_cast<long long>(failover_wait_s * 1000))
                     : std::chrono::milliseconds(0);
  net::Failover failover(std::move(endpoints), options);
  failover.on_switch(
      [](const std::string& note) { std::cerr << "exchange-client send: " << note << "\n"; });

  int status = 0;
  bool refused = false;  // some reply holds an <error>
  bool unknown = false;  // some request got no reply
  for (const std::string& file : files) {
    std::string content, error;
    if (!read_input(file, content, error)) {
      std::cerr << "exchange-client send: " << error << "\n";
      status = 1;
      continue;
    }
    std::string_view xml = net::strip_length_line(content);
    net::Failover::Answer answer;
    try {
      answer = failover.request(xml);
    } catch (const net::SessionUnsupported& e) {
      std::cerr << "exchange-client send: " << e.what() << "\n";
      return 1;  // no point trying the other files
    }
    if (answer.kind == net::Failover::Answer::Kind::Unknown) {
      std::cerr << "exchange-client send: " << file << ": sent to " << answer.server->name()
                << " but no reply came (" << answer.error
                << "): it may or may not have been applied; query before sending it again\n";
      unknown = true;
      continue;
    }
    if (answer.kind == net::Failover::Answer::Kind::Unreachable) {
      std::cerr << "exchange-client send: " << file << ": " << answer.error << "\n";
      if (answer.logon_refused) return 1;  // the next files would be refused too
      status = 1;
      continue;
    }
    const std::string& reply = answer.reply;
    // "<error" cannot occur in text or attribute values: the server escapes every '<'.
    if (reply.find("<error") != std::string::npos) refused = true;
    if (files.size() > 1) std::cout << "== " << file << "\n";
    std::cout << reply;
    if (!reply.empty() && reply.back() != '\n') std::cout << "\n";
    std::cout.flush();
  }
  if (status == 0 && unknown) return 4;
  if (status == 0 && refused) return 3;
  return status;
}

}  // namespace exch

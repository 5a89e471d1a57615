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

#include "net/connection.hpp"
#include "net/framing.hpp"

namespace po = boost::program_options;

namespace exch {

namespace {

po::options_description describe(std::string& host, unsigned& port, std::string& servers,
                                 bool& persistent, double& timeout_s, double& connect_timeout_s) {
  po::options_description d("exchange-client send FILE.xml... [options]");
  d.add_options()("host", po::value(&host)->default_value(host), "server host")(
      "port", po::value(&port)->default_value(port), "server port")(
      "server", po::value(&servers),
      "HOST:PORT,HOST:PORT,...: an active server and its standbys (--host/--port are then "
      "ignored). Each request goes to the one that served the last, and to the next when a "
      "server refuses the connection or answers that it serves nothing (the standby, or one "
      "that stepped down): nothing was applied there. A request sent that got no reply is "
      "reported as unknown and never sent again")(
      "persistent", po::bool_switch(&persistent),
      "send all files over one persistent session (\"EXCHANGE-SESSION 1\" extension) "
      "instead of one connection per file")(
      "timeout", po::value(&timeout_s)->default_value(timeout_s), "seconds a whole reply may take")(
      "connect-timeout", po::value(&connect_timeout_s)->default_value(connect_timeout_s),
      "seconds a TCP connect may take")("help,h", "this help");
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

// Whether a reply says that its server applied nothing and another one serves: the standby's
// answer, or that of a server another took over from (serving/reply_errors.hpp, Standby and
// Fenced; the client links nothing of the server, so the words are repeated here).
bool served_elsewhere(const std::string& reply) {
  return reply.find("this exchange server is the standby") != std::string::npos ||
         reply.find("this one has stepped down") != std::string::npos;
}

// The request was sent and no reply came: it may or may not have been applied.
struct OutcomeUnknown : net::NetError {
  using net::NetError::NetError;
};

// The endpoints of --server (or --host/--port), and the one that served last. Persistent: one
// session, to that one.
class Servers {
 public:
  Servers(std::vector<net::Endpoint> endpoints, net::Timeouts timeouts, bool persistent)
      : endpoints_(std::move(endpoints)), timeouts_(timeouts), persistent_(persistent) {}

  // The reply of the first server that serves `xml`, starting with the one that served the
  // last. Throws OutcomeUnknown once it was sent and no reply came (never sent again),
  // SessionUnsupported, or NetError when no server could be reached. When every server that
  // answered serves nothing, the last such answer is returned.
  std::string request(std::string_view xml) {
    std::string notes, last_reply;
    for (std::size_t i = 0; i < endpoints_.size(); ++i) {
      const std::size_t at = (current_ + i) % endpoints_.size();
      const net::Endpoint& endpoint = endpoints_[at];
      std::string reply;
      if (persistent_) {
        if (!session_ || session_at_ != at || !session_->usable()) {
          session_.reset();
          try {
            // Nothing of the request is sent before the session is open.
            session_ = net::Session::open(endpoint, timeouts_);
            session_at_ = at;
          } catch (const net::SessionUnsupported&) {
            throw;
          } catch (const net::NetError& e) {
            notes += (notes.empty() ? "" : "; ") + endpoint.name() + ": " + e.what();
            continue;
          }
        }
        try {
          reply = session_->request(xml);
        } catch (const net::NetError& e) {
          session_.reset();
          throw OutcomeUnknown(sent_no_reply(endpoint, e));
        }
      } else {
        net::Connection c;
        try {
          c = net::Connection::open(endpoint, timeouts_.connect);
        } catch (const net::NetError& e) {
          notes += (notes.empty() ? "" : "; ") + endpoint.name() + ": " + e.what();
          continue;
        }
        try {
          const auto deadline = net::Clock::now() + timeouts_.read;
          c.write_all(net::frame_request(xml), deadline);
          reply = c.read_until_eof(deadline, net::kMaxReplyBytes);
          if (reply.empty()) throw net::NetError("closed the connection without a reply");
        } catch (const net::NetError& e) {
          throw OutcomeUnknown(sent_no_reply(endpoint, e));
        }
      }
      if (endpoints_.size() > 1 && served_elsewhere(reply)) {
        notes += (notes.empty() ? "" : "; ") + endpoint.name() + " serves nothing (standby)";
        last_reply = std::move(reply);
        session_.reset();
        continue;
      }
      if (at != current_ && !notes.empty())
        std::cerr << "exchange-client send: sent to " << endpoint.name() << " (" << notes << ")\n";
      current_ = at;
      return reply;
    }
    if (!last_reply.empty()) return last_reply;
    throw net::NetError("no server could be reached: " + notes);
  }

 private:
  static std::string sent_no_reply(const net::Endpoint& endpoint, const std::exception& e) {
    return "sent to " + endpoint.name() + " but no reply came (" + e.what() +
           "): it may or may not have been applied; query before sending it again";
  }

  std::vector<net::Endpoint> endpoints_;
  net::Timeouts timeouts_;
  bool persistent_;
  std::size_t current_ = 0;
  std::unique_ptr<net::Session> session_;
  std::size_t session_at_ = 0;
};

}  // namespace

int run_send(int argc, const char* const* argv) {
  std::string host = "127.0.0.1";
  unsigned port = 12345;
  std::string server_list;
  bool persistent = false;
  double timeout_s = 30, connect_timeout_s = 5;
  std::vector<std::string> files;
  auto desc = describe(host, port, server_list, persistent, timeout_s, connect_timeout_s);
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
                 "but some reply holds an <error> (a refused request or child), 1 on\n"
                 "connection/session errors or unreadable files, 2 on usage errors.\n\n"
              << desc;
    return 0;
  }
  if (files.empty()) {
    std::cerr << "exchange-client send: no FILE given (see --help)\n";
    return 2;
  }
  if (port == 0 || port > 65535 || !(timeout_s > 0) || !(connect_timeout_s > 0)) {
    std::cerr << "exchange-client send: bad --port or timeout\n";
    return 2;
  }
  net::Timeouts timeouts;
  timeouts.connect = std::chrono::milliseconds(static_cast<long long>(connect_timeout_s * 1000));
  timeouts.read = std::chrono::milliseconds(static_cast<long long>(timeout_s * 1000));

  std::vector<net::Endpoint> endpoints;
  try {
    if (server_list.empty()) {
      endpoints.push_back(net::Endpoint::resolve(host, static_cast<std::uint16_t>(port)));
    } else {
      std::stringstream list(server_list);
      for (std::string item; std::getline(list, item, ',');) {
        std::string h;
        std::uint16_t p = 0;
        net::split_host_port(item, static_cast<std::uint16_t>(port), h, p);
        endpoints.push_back(net::Endpoint::resolve(h, p));
      }
    }
  } catch (const std::invalid_argument& e) {
    std::cerr << "exchange-client send: --server: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "exchange-client send: " << e.what() << "\n";
    return 1;
  }
  if (endpoints.empty()) {
    std::cerr << "exchange-client send: --server lists no server\n";
    return 2;
  }
  Servers servers(std::move(endpoints), timeouts, persistent);

  int status = 0;
  bool refused = false;  // some reply holds an <error>
  for (const std::string& file : files) {
    std::string content, error;
    if (!read_input(file, content, error)) {
      std::cerr << "exchange-client send: " << error << "\n";
      status = 1;
      continue;
    }
    std::string_view xml = net::strip_length_line(content);
    std::string reply;
    try {
      reply = servers.request(xml);
    } catch (const net::SessionUnsupported& e) {
      std::cerr << "exchange-client send: " << e.what() << "\n";
      return 1;  // no point trying the other files
    } catch (const OutcomeUnknown& e) {
      std::cerr << "exchange-client send: " << file << ": unknown: " << e.what() << "\n";
      status = 1;
      continue;
    } catch (const std::exception& e) {
      std::cerr << "exchange-client send: " << file << ": " << e.what() << "\n";
      status = 1;
      continue;
    }
    // "<error" cannot occur in text or attribute values: the server escapes every '<'.
    if (reply.find("<error") != std::string::npos) refused = true;
    if (files.size() > 1) std::cout << "== " << file << "\n";
    std::cout << reply;
    if (!reply.empty() && reply.back() != '\n') std::cout << "\n";
    std::cout.flush();
  }
  if (status == 0 && refused) return 3;
  return status;
}

}  // namespace exch

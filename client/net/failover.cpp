#include "net/failover.hpp"

#include <stdexcept>
#include <thread>
#include <utility>

namespace exch::net {

std::vector<std::unique_ptr<Endpoint>> resolve_servers(const std::string& list,
                                                       std::uint16_t default_port) {
  std::vector<std::unique_ptr<Endpoint>> out;
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t comma = list.find(',', start);
    const std::string item =
        list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (item.empty()) throw std::invalid_argument("empty server in '" + list + "'");
    std::string host;
    std::uint16_t port = default_port;
    split_host_port(item, default_port, host, port);
    out.push_back(std::make_unique<Endpoint>(Endpoint::resolve(host, port)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

bool refused_as_not_serving(std::string_view reply) {
  // The whole-request error form: <results><error>TEXT</error></results>, whatever precedes
  // it (the XML declaration). Item errors are indented on lines of their own.
  constexpr std::string_view kForm = "<results><error>Service unavailable";
  return reply.find(kForm) != std::string_view::npos;
}

Failover::Failover(std::vector<std::unique_ptr<Endpoint>> servers, Options options)
    : servers_(std::move(servers)), options_(options) {
  if (servers_.empty()) throw std::invalid_argument("no server given");
}

void Failover::next_server(const std::string& why) {
  session_.reset();
  const std::size_t from = current_;
  current_ = (current_ + 1) % servers_.size();
  if (note_ && servers_.size() > 1)
    note_(servers_[from]->name() + ": " + why + "; trying " + servers_[current_]->name());
}

Failover::Answer Failover::request(std::string_view xml) {
  const auto deadline = Clock::now() + options_.wait;
  Answer answer;
  std::size_t tried = 0;           // servers tried since the last pause
  std::size_t logons_refused = 0;  // of them, refused the logon
  for (;;) {
    const Endpoint& server = *servers_[current_];
    try {
      std::string reply;
      if (options_.persistent) {
        if (!session_ || !session_->usable()) session_ = Session::open(server, options_.connect);
        reply = session_->request(xml);
      } else {
        reply = request_once(server, xml, options_.connect);
      }
      // One server only: its refusal is the answer (as before there were several).
      if (servers_.size() == 1 || !refused_as_not_serving(reply)) {
        answer.kind = Answer::Kind::Reply;
        answer.reply = std::move(reply);
        answer.server = &server;
        return answer;
      }
      answer.error = server.name() + " does not serve now";
      answer.reply = std::move(reply);  // the last refusal, if no server serves in time
      answer.server = &server;
      next_server("does not serve now");
    } catch (const NoReply& e) {
      answer.kind = Answer::Kind::Unknown;
      answer.error = e.what();
      answer.server = &server;
      next_server("no reply");
      return answer;
    } catch (const NotSent& e) {
      answer.error = e.what();
      answer.logon_refused = dynamic_cast<const LogonRefused*>(&e) != nullptr;
      logons_refused += answer.logon_refused;
      next_server(e.what());
    }
    if (++tried >= servers_.size()) {
      // Every server refused the logon: no takeover will change that; and retrying a wrong
      // key only runs into the servers' logon throttle.
      if (logons_refused == tried) break;
      tried = logons_refused = 0;
      if (Clock::now() >= deadline) break;
      // Every server refused or was unreachable: a takeover is under way. Poll gently.
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  if (!answer.reply.empty()) {
    // Some server answered, refusing: that answer is the outcome (nothing was applied).
    answer.kind = Answer::Kind::Reply;
    return answer;
  }
  answer.kind = Answer::Kind::Unreachable;
  return answer;
}

}  // namespace exch::net

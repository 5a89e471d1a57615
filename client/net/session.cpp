#include "net/session.hpp"

#include "net/framing.hpp"
#include "net/logon.hpp"
#include "wire/session_hello.hpp"

namespace exch::net {

namespace {

// What goes first on a new connection: the logon line when there are credentials.
std::string opening(const ConnectOptions& options) {
  return options.credentials.present() ? logon_line(options.credentials) : std::string();
}

// The session hello's answer was not the accept line: the server is too old.
[[noreturn]] void hello_refused(Connection& c, const std::string& line, bool eof) {
  std::string answer = line;
  if (!eof) {
    // Show the rest of what an old server sent (its <error> reply), briefly.
    answer += "\n" + c.read_some_quietly(Clock::now() + std::chrono::milliseconds(500), 2048);
  }
  c.close();
  throw SessionUnsupported("server does not support persistent sessions (it answered: " +
                           (answer.empty() ? std::string("nothing, it closed the connection")
                                           : printable_excerpt(answer, 300)) +
                           ")");
}

}  // namespace

std::string request_once(const Endpoint& endpoint, std::string_view xml,
                         const ConnectOptions& options) {
  Connection c = Connection::open(endpoint, options);
  auto deadline = Clock::now() + options.timeouts.read;
  try {
    c.write_all(opening(options) + frame_request(xml), deadline);
  } catch (const NetError& e) {
    throw NotSent(e.what());
  }
  if (options.credentials.present()) expect_logon_accepted(c, deadline, options.credentials, true);
  std::string reply;
  try {
    reply = c.read_until_eof(deadline, kMaxReplyBytes);
  } catch (const NotSent&) {
    throw;  // the TLS handshake refused this client: the request never reached the server
  } catch (const NetError& e) {
    throw NoReply(e.what());
  }
  if (reply.empty()) throw NoReply(endpoint.name() + " closed the connection without a reply");
  return reply;
}

void probe(const Endpoint& endpoint, const ConnectOptions& options) {
  Connection c = Connection::open(endpoint, options);
  if (!options.credentials.present()) return;
  auto deadline = Clock::now() + options.timeouts.read;
  try {
    c.write_all(opening(options), deadline);
  } catch (const NetError& e) {
    throw NotSent(e.what());
  }
  expect_logon_accepted(c, deadline, options.credentials, false);
}

std::unique_ptr<Session> Session::open(const Endpoint& endpoint, const ConnectOptions& options) {
  Connection c = Connection::open(endpoint, options);
  const auto& t = options.timeouts;
  auto deadline = Clock::now() + t.read;
  bool eof = false;
  std::string line;
  try {
    // Pipelined: the logon line and the hello in one write; their answers come in order.
    c.write_all(opening(options) + std::string(wire::kSessionHello) + '\n', deadline);
    if (options.credentials.present())
      expect_logon_accepted(c, deadline, options.credentials, false);
    line = c.read_line(deadline, 4096, eof);
  } catch (const NotSent&) {
    throw;
  } catch (const NetError& e) {
    // Not fatal: a busy server (e.g. all threads of a thread-per-client
    // pool taken) is silent too. Only a wrong answer is SessionUnsupported.
    if (std::string_view(e.what()).rfind("timeout", 0) == 0)
      throw NotSent("timeout: no answer to the session hello from " + endpoint.name() + " within " +
                    std::to_string(t.read.count()) +
                    " ms (server busy, or it does not speak the session extension)");
    throw NotSent(e.what());
  }
  if (eof || line != wire::kSessionAccept) hello_refused(c, line, eof);
  return std::unique_ptr<Session>(new Session(endpoint, std::move(c), options));
}

std::string Session::request(std::string_view xml) {
  auto deadline = Clock::now() + timeouts_.read;
  try {
    connection_.write_all(frame_request(xml), deadline);
  } catch (const NetError& e) {
    connection_.close();
    throw NotSent(e.what());
  }
  try {
    bool eof = false;
    std::string line = connection_.read_line(deadline, 32, eof);
    if (eof) {
      if (line.empty()) throw NoReply(connection_.peer() + " closed the session without a reply");
      throw NoReply(connection_.peer() +
                    " closed the session in the middle of a reply: " + printable_excerpt(line));
    }
    auto length = parse_length_line(line);
    if (!length || *length > kMaxReplyBytes)
      throw NoReply("bad reply length line from " + connection_.peer() + ": " +
                    printable_excerpt(line));
    return connection_.read_exact(*length, deadline);
  } catch (const NoReply&) {
    connection_.close();  // the stream position is unknown: never reuse it
    throw;
  } catch (const NetError& e) {
    connection_.close();
    throw NoReply(e.what());
  } catch (...) {
    connection_.close();
    throw;
  }
}

std::unique_ptr<Session> SessionPool::acquire() {
  for (;;) {
    std::unique_ptr<Session> s;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (idle_.empty()) break;
      s = std::move(idle_.back());
      idle_.pop_back();
    }
    if (!s->stale()) return s;
    // dropped: the server closed it while it was idle
  }
  auto s = Session::open(endpoint_, options_);
  std::lock_guard<std::mutex> lock(mutex_);
  ++opened_;
  return s;
}

void SessionPool::release(std::unique_ptr<Session> session) {
  if (!session || !session->usable()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  idle_.push_back(std::move(session));
}

std::size_t SessionPool::opened() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return opened_;
}

std::size_t SessionPool::close_idle() {
  std::vector<std::unique_ptr<Session>> closing;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closing.swap(idle_);
  }
  return closing.size();  // closed here, outside the lock
}

}  // namespace exch::net

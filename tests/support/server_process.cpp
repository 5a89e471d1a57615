#include "support/server_process.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "support/environment.hpp"
#include "support/loopback.hpp"
#include "support/test_database.hpp"

namespace testing_support {
namespace {

std::string server_binary() { return env_or_skip("EXCHANGE_SERVER_BIN"); }

bool accepts_connections(unsigned short port) {
  int fd = try_connect("127.0.0.1", port);
  if (fd < 0) return false;
  ::close(fd);
  return true;
}

// The server on `port` against the test database, with `flags` after the harness's own, its
// output appended to `log_path`. It binds 127.0.0.1 unless `flags` say otherwise.
pid_t spawn_server(unsigned short port, const std::vector<std::string>& flags,
                   const std::string& log_path) {
  std::vector<std::string> args = {server_binary(), "--port", std::to_string(port), "--db",
                                   database_url()};
  if (std::find(flags.begin(), flags.end(), "--bind") == flags.end())
    args.insert(args.end(), {"--bind", "127.0.0.1"});
  args.insert(args.end(), flags.begin(), flags.end());
  pid_t pid = ::fork();
  if (pid == 0) {
    FILE* log = std::fopen(log_path.c_str(), "a");
    if (log) {
      ::dup2(fileno(log), 2);
      ::dup2(fileno(log), 1);
    }
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    std::perror("execv");
    std::_Exit(127);
  }
  return pid;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

int run_to_exit(const std::vector<std::string>& flags, std::string& output) {
  const unsigned short port = free_port();
  const std::string log_path = "/tmp/exchange-test-server-" + std::to_string(::getpid()) + "-" +
                               std::to_string(port) + ".log";
  std::remove(log_path.c_str());
  pid_t pid = spawn_server(port, flags, log_path);
  int status = 0;
  int code = -1;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (code == -1) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
  }
  output = read_file(log_path);
  return code;
}

unsigned short free_port() {
  unsigned short port = 0;
  ::close(bind_loopback(port));
  return port;
}

std::vector<std::string> models_under_test() {
  const char* env = std::getenv("EXCHANGE_TEST_MODELS");
  std::string list = env && *env ? env : "reactor per-request per-client pool fotp adaptive";
  std::vector<std::string> out;
  std::istringstream in(list);
  for (std::string m; in >> m;) out.push_back(m);
  return out;
}

ServerProcess::ServerProcess(std::vector<std::string> flags, Start start)
    : flags_(std::move(flags)) {
  port_ = free_port();
  log_path_ = "/tmp/exchange-test-server-" + std::to_string(::getpid()) + "-" +
              std::to_string(port_) + ".log";
  if (start == Start::Listening)
    launch(flags_);
  else
    spawn(flags_);
}

ServerProcess::~ServerProcess() {
  if (pid_ > 0) kill();
}

void ServerProcess::launch(const std::vector<std::string>& flags) {
  spawn(flags);
  if (wait_listening(std::chrono::seconds(30))) return;
  if (pid_ < 0) throw std::runtime_error("exchange-server exited at start-up:\n" + log());
  throw std::runtime_error("exchange-server did not start listening:\n" + log());
}

void ServerProcess::spawn(const std::vector<std::string>& flags) {
  exit_status_ = -1;
  pid_ = spawn_server(port_, flags, log_path_);
}

bool ServerProcess::reaped() {
  if (pid_ < 0) return true;
  int status;
  if (::waitpid(pid_, &status, WNOHANG) != pid_) return false;
  pid_ = -1;
  exit_status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return true;
}

bool ServerProcess::wait_listening(std::chrono::milliseconds at_most) {
  auto deadline = std::chrono::steady_clock::now() + at_most;
  while (std::chrono::steady_clock::now() < deadline) {
    if (reaped()) return false;
    if (accepts_connections(port_)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

std::optional<int> ServerProcess::wait_exit_for(std::chrono::milliseconds at_most) {
  auto deadline = std::chrono::steady_clock::now() + at_most;
  for (;;) {
    if (reaped()) return exit_status_;
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

int ServerProcess::wait_exit() {
  if (pid_ < 0) return exit_status_;
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
  exit_status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return exit_status_;
}

int ServerProcess::stop() {
  if (pid_ > 0) ::kill(pid_, SIGTERM);
  int code = wait_exit();
  // A failed exit (a sanitizer report, an exception at shutdown) explains itself in the log.
  if (code != 0) std::cerr << "exchange-server exited with " << code << "; its log:\n" << log();
  return code;
}

void ServerProcess::kill() {
  if (pid_ > 0) ::kill(pid_, SIGKILL);
  wait_exit();
}

void ServerProcess::restart() {
  std::vector<std::string> flags;
  for (const auto& f : flags_)
    if (f != "--reset") flags.push_back(f);
  launch(flags);
}

std::size_t ServerProcess::resident_bytes() const {
  std::ifstream in("/proc/" + std::to_string(pid_) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stoul(line.substr(6)) * 1024;  // in kB
  return 0;
}

std::string ServerProcess::log() const { return read_file(log_path_); }

}  // namespace testing_support

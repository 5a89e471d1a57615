#pragma once
// The real exchange-server binary (EXCHANGE_SERVER_BIN), started on a free port against the
// test database, stopped with a signal.
#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace testing_support {

class ServerProcess {
 public:
  // Whether the constructor waits for the server to accept connections.
  enum class Start { Listening, Launched };

  // Starts the server with these extra flags (e.g. {"--concurrency", "pool", "--reset"}) and
  // waits until it accepts connections (throws if it exits or does not within 30 s). With
  // Start::Launched it returns at once: a server expected to wait, or to be refused.
  explicit ServerProcess(std::vector<std::string> flags, Start start = Start::Listening);
  ~ServerProcess();
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  unsigned short port() const { return port_; }
  // Its process id while it runs (-1 once it has exited).
  pid_t pid() const { return pid_; }
  // Its resident memory now, in bytes (VmRSS; 0 if it cannot be read).
  std::size_t resident_bytes() const;
  // SIGTERM, then the exit status (the server finishes in-flight requests and exits 0).
  int stop();
  // SIGKILL: a crash.
  void kill();
  // Starts it again on the same port with the same flags minus --reset.
  void restart();
  std::string log() const;

  // Waits up to `at_most` for it to accept connections; false if it exited or did not.
  bool wait_listening(std::chrono::milliseconds at_most);
  // Waits up to `at_most` for it to exit by itself: its exit status, or nothing if it still
  // runs.
  std::optional<int> wait_exit_for(std::chrono::milliseconds at_most);

 private:
  void launch(const std::vector<std::string>& flags);
  void spawn(const std::vector<std::string>& flags);
  // Reaps it if it has exited (keeping the status); true if it has.
  bool reaped();
  int wait_exit();

  std::vector<std::string> flags_;
  unsigned short port_ = 0;
  pid_t pid_ = -1;
  int exit_status_ = -1;  // once reaped
  std::string log_path_;
};

// Runs the server with these extra flags until it exits by itself, as it should at start-up
// after bad flags: its exit status, and its output in `output`. Killed after 30 s (-1).
int run_to_exit(const std::vector<std::string>& flags, std::string& output);

unsigned short free_port();
// Models the end-to-end suite runs against (EXCHANGE_TEST_MODELS="a b" narrows it).
std::vector<std::string> models_under_test();

}  // namespace testing_support

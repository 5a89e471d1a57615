#pragma once
// The real exchange-server binary (EXCHANGE_SERVER_BIN), started on a free port against the
// test database, stopped with a signal.
#include <sys/types.h>

#include <string>
#include <vector>

namespace testing_support {

class ServerProcess {
 public:
  // Starts the server with these extra flags (e.g. {"--concurrency", "pool", "--reset"}) and
  // waits until it accepts connections.
  explicit ServerProcess(std::vector<std::string> flags);
  ~ServerProcess();
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  unsigned short port() const { return port_; }
  // The server's resident memory now (VmRSS of /proc/<pid>/status), in KiB; -1 if unknown.
  long resident_kib() const;
  // SIGTERM, then the exit status (the server finishes in-flight requests and exits 0).
  int stop();
  // SIGKILL: a crash.
  void kill();
  // Starts it again on the same port with the same flags minus --reset.
  void restart();
  std::string log() const;

 private:
  void launch(const std::vector<std::string>& flags);
  int wait_exit();

  std::vector<std::string> flags_;
  unsigned short port_ = 0;
  pid_t pid_ = -1;
  std::string log_path_;
};

// Runs the server with these extra flags until it exits by itself, as it should at start-up
// after bad flags: its exit status, and its output in `output`. Killed after 30 s (-1).
int run_to_exit(const std::vector<std::string>& flags, std::string& output);

unsigned short free_port();
// Models the end-to-end suite runs against (EXCHANGE_TEST_MODELS="a b" narrows it).
std::vector<std::string> models_under_test();

}  // namespace testing_support

// TLS for the client's tests: a throwaway PKI made with OpenSSL at test time, and a TLS
// server on 127.0.0.1 that runs a function per connection (the TLS twin of OneShotServer).
#pragma once

#include <openssl/ssl.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

namespace client_test {

// Keys and certificates as PEM files in a new temporary directory, removed at the end.
struct TestPki {
  TestPki();
  ~TestPki();
  TestPki(const TestPki&) = delete;
  TestPki& operator=(const TestPki&) = delete;

  std::string dir;
  std::string ca_file;                      // the CA of the server and of the client
  std::string server_cert, server_key;      // names 127.0.0.1, ::1 and localhost
  std::string client_cert, client_key;      // CN alice, for mutual TLS
  std::string other_ca_file;                // a CA nobody trusts
  std::string stranger_cert, stranger_key;  // by the other CA, for 127.0.0.1
  std::string misnamed_cert, misnamed_key;  // by the CA, for elsewhere.example only
};

// Accepts `connections` connections, one after the other, handshakes (failures are counted,
// not served) and runs serve(ssl, i) for each; then close_notify and close.
class TlsServer {
 public:
  struct Options {
    Options(std::string c, std::string k, std::string ca = "", int max = 0)
        : cert(std::move(c)), key(std::move(k)), client_ca(std::move(ca)), max_version(max) {}
    std::string cert, key;
    std::string client_ca;  // not empty: a client certificate from this CA is required
    int max_version = 0;    // 0: up to TLS 1.3; TLS1_2_VERSION caps it
  };
  TlsServer(const Options& options, std::function<void(SSL*, int)> serve, int connections = 1);
  ~TlsServer();
  std::uint16_t port() const { return port_; }
  int handshakes() const { return handshakes_.load(); }  // completed
  int resumed() const { return resumed_.load(); }
  int failed() const { return failed_.load(); }
  std::string client_cn() const;  // subject CN of the last client certificate seen

 private:
  void serve_one(int fd, int i, const std::function<void(SSL*, int)>& serve);

  SSL_CTX* ctx_ = nullptr;
  int listen_fd_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<int> handshakes_{0}, resumed_{0}, failed_{0};
  mutable std::mutex mutex_;
  std::string client_cn_;
  std::thread thread_;
};

// Blocking helpers for the server side (no Catch assertions: they run on its thread).
std::string ssl_read_line(SSL* ssl);
std::string ssl_read_n(SSL* ssl, std::size_t n);
void ssl_write(SSL* ssl, const std::string& bytes);

}  // namespace client_test

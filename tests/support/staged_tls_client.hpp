#pragma once
// A TLS client whose handshake the test sends flight by flight (OpenSSL over two memory BIOs
// on a plain loopback socket): each flight can go out whole, in part or not at all, and the
// connection can then be closed, reset or left stalled, so a handshake can be cut at any stage.
// Every wait has a deadline.
#include <openssl/ssl.h>

#include <chrono>
#include <string>
#include <vector>

#include "support/tls_client.hpp"

namespace testing_support {

class StagedTlsClient {
 public:
  using Clock = std::chrono::steady_clock;

  // Connects to 127.0.0.1:`port`; nothing is sent yet. `max_version`: TLS1_2_VERSION or
  // TLS1_3_VERSION. Throws std::runtime_error if a file cannot be loaded.
  StagedTlsClient(unsigned short port, const TlsClientOptions& options,
                  int max_version = TLS1_3_VERSION);
  ~StagedTlsClient();
  StagedTlsClient(const StagedTlsClient&) = delete;
  StagedTlsClient& operator=(const StagedTlsClient&) = delete;

  // The next flight OpenSSL wants to send, not sent: the ClientHello first; later, once what the
  // server sent lets the handshake go on, the client's next flight. Reads the server's bytes as
  // needed, for at most `within`. Empty once the handshake is done with nothing to send; throws
  // if the server ends the connection, the handshake fails, or `within` passes first.
  std::string next_flight(std::chrono::milliseconds within);
  bool handshake_done() const { return done_; }

  // Application data sealed into TLS records, not sent (after the handshake).
  std::string seal(const std::string& plaintext);

  // Bytes on the socket as they are: false once the server is gone.
  bool send(const std::string& bytes);
  // Whether the server ends the connection (EOF or reset) within `within`; what it sends before
  // is read and dropped.
  bool ended_within(std::chrono::milliseconds within);
  // An ordinary close (FIN; the kernel resets instead if unread bytes wait).
  void close();
  // A reset (SO_LINGER {1, 0}, then close).
  void reset();

  // `bytes` cut at TLS record boundaries (a partial last record kept as it is).
  static std::vector<std::string> records(const std::string& bytes);

 private:
  // Runs the handshake on what was received; what OpenSSL wants to send now.
  std::string drive();
  std::string take_output();
  // Frees everything (the destructor, and a constructor that throws).
  void release();
  int fd_ = -1;
  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
  BIO* in_ = nullptr;   // what the server sent, for OpenSSL to read (owned by ssl_)
  BIO* out_ = nullptr;  // what OpenSSL wrote, for the test to send (owned by ssl_)
  bool done_ = false;
};

}  // namespace testing_support

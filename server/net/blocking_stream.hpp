#pragma once
// One connection's bytes for the thread-per-connection driver (blocking_connection.hpp): the
// socket itself, or TLS over it (OpenSSL on the descriptor set non-blocking). Every wait is a
// poll() bounded by the caller's deadline, so a peer that stalls a handshake, a read or a write
// is cut when its deadline passes, as on plaintext.
#include <openssl/ssl.h>

#include <chrono>
#include <cstddef>
#include <string>

namespace net {

class TlsContext;

class BlockingStream {
 public:
  using Clock = std::chrono::steady_clock;
  // No deadline: the latest time point (waits are then sliced into minutes).
  static constexpr Clock::time_point kNoDeadline = Clock::time_point::max();
  enum class Io { Done, Failed, TimedOut };
  enum class Read { Data, Eof, Again, Failed };

  // Plaintext, or TLS with `tls` (then the handshake must come first).
  BlockingStream(int fd, TlsContext* tls);
  ~BlockingStream();
  BlockingStream(const BlockingStream&) = delete;
  BlockingStream& operator=(const BlockingStream&) = delete;

  bool tls() const { return ssl_ != nullptr; }
  // TLS: the server's handshake, finished before `deadline`; plaintext: Done at once.
  Io handshake(Clock::time_point deadline);
  // The verified client certificate's name (net/tls_context.hpp); empty without one.
  std::string certificate_name() const;
  // Waits at most until `deadline` (sliced: at most a minute per call) for read() to have
  // something; true at once when TLS already holds decrypted bytes.
  bool wait_readable(Clock::time_point deadline);
  // Takes what is there without waiting: Data (`got` bytes), Eof, Again (nothing yet), Failed.
  Read read(char* buf, std::size_t size, std::size_t& got);
  // Writes all of `bytes` before the deadline; a peer that stops reading times out.
  Io write_all(const std::string& bytes, Clock::time_point deadline);
  // TLS: sends close_notify without waiting for the peer's; plaintext: nothing.
  void close_notify();

 private:
  // Waits for the descriptor to be readable (or writable) until the deadline; false once past.
  bool wait(bool for_write, Clock::time_point deadline);

  int fd_;
  SSL* ssl_ = nullptr;
  bool wants_write_ = false;  // TLS: the last read needs the socket writable first
};

// Reads and drops what the peer has sent that is already here (at most a few reads, without
// waiting), so that closing `fd` sends a FIN rather than a reset that could destroy the last
// reply (an error, a refused logon) before the peer reads it.
void discard_pending_input(int fd);

// Milliseconds left until `deadline` for poll(), from 0 to a minute.
int poll_timeout(BlockingStream::Clock::time_point deadline);

}  // namespace net

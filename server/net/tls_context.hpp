#pragma once
// The exchange port's TLS (--tls-cert, --tls-key, --tls-client-ca): one OpenSSL context built at
// start, shared by every connection of either driver (Asio's ssl::stream for the event loops,
// net/tls_stream.hpp for thread-per-client). TLS 1.2 and 1.3 only. With a client CA, clients
// are asked for a certificate: one that does not verify (another CA, expired, not yet valid)
// ends the handshake; none at all is allowed (the client may log on with a key instead).
#include <string>

#include <boost/asio/ssl/context.hpp>

namespace net {

struct TlsFiles {
  std::string cert;       // PEM certificate chain of the server
  std::string key;        // PEM private key
  std::string client_ca;  // PEM CA certificates that sign client certificates; empty: none asked
};

class TlsContext {
 public:
  // Throws std::runtime_error naming the file and OpenSSL's reason when one cannot be used.
  explicit TlsContext(const TlsFiles& files);
  boost::asio::ssl::context& asio() { return context_; }
  SSL_CTX* native() { return context_.native_handle(); }

 private:
  boost::asio::ssl::context context_;
};

// The subject CN of the client certificate that `ssl` verified; empty when it presented none or
// it did not verify. A NUL in the CN becomes '?', which no principal's name holds.
std::string certificate_name(SSL* ssl);

}  // namespace net

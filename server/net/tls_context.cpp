#include "net/tls_context.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <algorithm>
#include <memory>
#include <stdexcept>

namespace net {
namespace {

namespace ssl = boost::asio::ssl;

// A session resumed from a ticket or the cache is trusted for this long after its full
// handshake (OpenSSL's default for TLS 1.3 is two hours).
constexpr long kSessionSeconds = 300;
// Sessions the server keeps for resumption (each a few hundred bytes and a reference to the
// client's certificate); the oldest go first when it is full.
constexpr long kCachedSessions = 20000;

std::string openssl_reason() {
  unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return "unknown OpenSSL error";
  char text[256];
  ERR_error_string_n(code, text, sizeof text);
  return text;
}

// Runs one OpenSSL set-up call; a failure names the flag and the file.
void require(bool ok, const std::string& flag, const std::string& file) {
  if (!ok) throw std::runtime_error("cannot use " + flag + " " + file + ": " + openssl_reason());
}

}  // namespace

TlsContext::TlsContext(const TlsFiles& files) : context_(ssl::context::tls_server) {
  SSL_CTX* ctx = context_.native_handle();
  ERR_clear_error();
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  // A TCP close without close_notify reads as an end of stream, as on plaintext: the framing's
  // lengths already tell a cut request from a whole one, and both drivers then see the same.
  SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION |
                               SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_IGNORE_UNEXPECTED_EOF);
  require(SSL_CTX_use_certificate_chain_file(ctx, files.cert.c_str()) == 1, "--tls-cert",
          files.cert);
  require(SSL_CTX_use_PrivateKey_file(ctx, files.key.c_str(), SSL_FILETYPE_PEM) == 1, "--tls-key",
          files.key);
  require(SSL_CTX_check_private_key(ctx) == 1, "--tls-key", files.key + " with " + files.cert);
  // Sessions resumed by clients that offer one: the cache and the tickets are OpenSSL's own.
  static const unsigned char kContextId[] = "exchange";
  SSL_CTX_set_session_id_context(ctx, kContextId, sizeof kContextId - 1);
  SSL_CTX_set_timeout(ctx, kSessionSeconds);
  // Resumption from the server's own cache, not from self-contained tickets: a ticket holds the
  // client's certificate, which OpenSSL 3.0 decodes again at every resumption (about a
  // millisecond of CPU); a cached session is found by its id. One ticket per handshake.
  SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_SERVER);
  SSL_CTX_sess_set_cache_size(ctx, kCachedSessions);
  SSL_CTX_set_num_tickets(ctx, 1);
  if (files.client_ca.empty()) return;
  require(SSL_CTX_load_verify_locations(ctx, files.client_ca.c_str(), nullptr) == 1,
          "--tls-client-ca", files.client_ca);
  STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(files.client_ca.c_str());
  require(names != nullptr, "--tls-client-ca", files.client_ca);
  SSL_CTX_set_client_CA_list(ctx, names);
  // Asked for, checked when given; not required (a key logon may follow instead).
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
}

std::string certificate_name(SSL* ssl) {
  if (SSL_get_verify_result(ssl) != X509_V_OK) return {};
  std::unique_ptr<X509, decltype(&X509_free)> cert(SSL_get1_peer_certificate(ssl), X509_free);
  if (!cert) return {};
  X509_NAME* subject = X509_get_subject_name(cert.get());
  int index = X509_NAME_get_index_by_NID(subject, NID_commonName, -1);
  if (index < 0) return {};
  ASN1_STRING* data = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, index));
  unsigned char* utf8 = nullptr;
  int length = ASN1_STRING_to_UTF8(&utf8, data);
  if (length < 0) return {};
  std::string name(reinterpret_cast<char*>(utf8), static_cast<std::size_t>(length));
  OPENSSL_free(utf8);
  // A CN with a NUL inside could pass for a shorter name: it names no one, but it is still a
  // verified certificate (refused as unknown, not as no certificate). '?' is in no principal's
  // name (auth/principals.hpp).
  std::replace(name.begin(), name.end(), '\0', '?');
  return name;
}

}  // namespace net

// TlsClient: the shared SSL_CTX and the session cache (tls.hpp).
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "net/openssl_error.hpp"
#include "net/tls.hpp"

namespace exch::net {

namespace {

// An encrypted key must not prompt on the terminal in the middle of a benchmark: it fails.
int no_passphrase(char*, int, int, void*) { return 0; }

// Sessions kept per server: enough tickets for this many connections opened at once.
constexpr std::size_t kSessionsPerServer = 64;

[[noreturn]] void refuse(const std::string& flag, const std::string& file) {
  throw TlsSetupError("cannot load " + flag + " " + file + ": " + openssl_reason());
}

}  // namespace

std::shared_ptr<TlsClient> TlsClient::create(const TlsOptions& options) {
  return std::shared_ptr<TlsClient>(new TlsClient(options));
}

TlsClient::TlsClient(const TlsOptions& options) : options_(options) {
  ERR_clear_error();
  ctx_ = SSL_CTX_new(TLS_client_method());
  if (ctx_ == nullptr) throw TlsSetupError("cannot make a TLS context: " + openssl_reason());
  SSL_CTX_set_min_proto_version(ctx_, TLS1_2_VERSION);
  if (options_.max_tls12) SSL_CTX_set_max_proto_version(ctx_, TLS1_2_VERSION);
  SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER, nullptr);
  SSL_CTX_set_default_passwd_cb(ctx_, no_passphrase);
  SSL_CTX_set_app_data(ctx_, this);
  // A server that closes TCP without close_notify ends the stream as it would in plaintext;
  // replies are read until EOF only in the one-shot mode, where plaintext has the same limit.
  SSL_CTX_set_options(ctx_, SSL_OP_IGNORE_UNEXPECTED_EOF);
  // Read whole socket buffers, not a record's header and then its body: one recv a reply.
  SSL_CTX_set_read_ahead(ctx_, 1);
  if (options_.resume) {
    // No internal store: each server's last session is kept here, by host:port.
    SSL_CTX_set_session_cache_mode(ctx_, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
    SSL_CTX_sess_set_new_cb(ctx_, on_new_session);
  } else {
    SSL_CTX_set_session_cache_mode(ctx_, SSL_SESS_CACHE_OFF);
    SSL_CTX_set_options(ctx_, SSL_OP_NO_TICKET);  // every handshake a full one
  }
  try {
    load_files();
  } catch (...) {
    SSL_CTX_free(ctx_);
    throw;
  }
}

void TlsClient::load_files() {
  if (options_.ca_file.empty()) {
    if (SSL_CTX_set_default_verify_paths(ctx_) != 1)
      throw TlsSetupError("cannot load the system's trusted certificates: " + openssl_reason());
  } else if (SSL_CTX_load_verify_locations(ctx_, options_.ca_file.c_str(), nullptr) != 1) {
    refuse("--ca", options_.ca_file);
  }
  if (options_.cert_file.empty() != options_.key_file.empty())
    throw TlsSetupError("a client certificate needs its key, and a key its certificate");
  if (options_.cert_file.empty()) return;
  if (SSL_CTX_use_certificate_chain_file(ctx_, options_.cert_file.c_str()) != 1)
    refuse("--cert", options_.cert_file);
  if (SSL_CTX_use_PrivateKey_file(ctx_, options_.key_file.c_str(), SSL_FILETYPE_PEM) != 1)
    refuse("--key", options_.key_file);
  if (SSL_CTX_check_private_key(ctx_) != 1)
    throw TlsSetupError("--key " + options_.key_file + " does not belong to --cert " +
                        options_.cert_file + ": " + openssl_reason());
}

TlsClient::~TlsClient() {
  for (auto& entry : sessions_)
    for (SSL_SESSION* session : entry.second) SSL_SESSION_free(session);
  SSL_CTX_free(ctx_);
}

int TlsClient::on_new_session(SSL* ssl, SSL_SESSION* session) {
  auto* client = static_cast<TlsClient*>(SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl)));
  auto* stream = static_cast<TlsStream*>(SSL_get_app_data(ssl));
  if (client == nullptr || stream == nullptr || !client->options_.resume) return 0;
  if (!SSL_SESSION_is_resumable(session)) return 0;
  client->remember(stream->peer(), session);
  return 1;  // the reference is ours now
}

void TlsClient::remember(const std::string& server, SSL_SESSION* session) {
  SSL_SESSION* dropped = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<SSL_SESSION*>& kept = sessions_[server];
    kept.push_back(session);
    if (kept.size() > kSessionsPerServer) {
      dropped = kept.front();
      kept.erase(kept.begin());
    }
  }
  if (dropped != nullptr) SSL_SESSION_free(dropped);
}

void TlsClient::offer(SSL* ssl, const std::string& server) {
  if (!options_.resume) return;
  SSL_SESSION* taken = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<SSL_SESSION*>& kept = sessions_[server];
    while (!kept.empty() && !SSL_SESSION_is_resumable(kept.back())) {
      SSL_SESSION_free(kept.back());
      kept.pop_back();
    }
    if (kept.empty()) return;
    SSL_set_session(ssl, kept.back());  // takes its own reference
    if (SSL_SESSION_get_protocol_version(kept.back()) < TLS1_3_VERSION) return;  // reusable
    taken = kept.back();
    kept.pop_back();
  }
  SSL_SESSION_free(taken);  // a TLS 1.3 ticket: used once
}

void TlsClient::count(bool resumed) {
  handshakes_.fetch_add(1, std::memory_order_relaxed);
  if (resumed) resumed_.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace exch::net

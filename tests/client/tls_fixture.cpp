#include "tls_fixture.hpp"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <tuple>

#include "support/loopback.hpp"

namespace client_test {

namespace {

struct Freer {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
  void operator()(X509* x) const { X509_free(x); }
};
using Key = std::unique_ptr<EVP_PKEY, Freer>;
using Cert = std::unique_ptr<X509, Freer>;

void check(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(std::string("test PKI: ") + what + " failed");
}

Key new_key() {
  Key k(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"));
  check(k != nullptr, "EC key generation");
  return k;
}

void add_ext(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  check(ext != nullptr && X509_add_ext(cert, ext, -1) == 1, "certificate extension");
  X509_EXTENSION_free(ext);
}

// A certificate for `key` named `cn`, signed by issuer/issuer_key (self-signed when null).
// `alt_names` (e.g. "IP:127.0.0.1,DNS:localhost") makes a leaf; empty makes a CA.
Cert new_cert(EVP_PKEY* key, const std::string& cn, X509* issuer, EVP_PKEY* issuer_key,
              const std::string& alt_names) {
  static std::atomic<long> serial{1};
  Cert x(X509_new());
  check(x != nullptr, "X509_new");
  X509_set_version(x.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(x.get()), serial++);
  X509_gmtime_adj(X509_getm_notBefore(x.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(x.get()), 24 * 3600);
  X509_set_pubkey(x.get(), key);
  X509_NAME* name = X509_get_subject_name(x.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  X509* signer = issuer != nullptr ? issuer : x.get();
  X509_set_issuer_name(x.get(), X509_get_subject_name(signer));
  if (alt_names.empty()) {
    add_ext(x.get(), signer, NID_basic_constraints, "critical,CA:TRUE");
    add_ext(x.get(), signer, NID_key_usage, "critical,keyCertSign,cRLSign");
  } else {
    add_ext(x.get(), signer, NID_basic_constraints, "critical,CA:FALSE");
    add_ext(x.get(), signer, NID_subject_alt_name, alt_names.c_str());
  }
  check(X509_sign(x.get(), issuer_key != nullptr ? issuer_key : key, EVP_sha256()) > 0, "sign");
  return x;
}

void write_pem(const std::string& path, X509* cert, EVP_PKEY* key) {
  FILE* f = std::fopen(path.c_str(), "w");
  check(f != nullptr, "opening a PEM file");
  bool ok = cert != nullptr
                ? PEM_write_X509(f, cert) == 1
                : PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr) == 1;
  std::fclose(f);
  check(ok, "writing PEM");
}

// A leaf signed by ca/ca_key, written as NAME.pem and NAME.key; returns the two paths.
std::pair<std::string, std::string> leaf(const std::string& dir, const std::string& name,
                                         const std::string& cn, const std::string& alt_names,
                                         X509* ca, EVP_PKEY* ca_key) {
  Key key = new_key();
  Cert cert = new_cert(key.get(), cn, ca, ca_key, alt_names);
  std::string cert_path = dir + "/" + name + ".pem", key_path = dir + "/" + name + ".key";
  write_pem(cert_path, cert.get(), nullptr);
  write_pem(key_path, nullptr, key.get());
  return {cert_path, key_path};
}

}  // namespace

TestPki::TestPki() {
  std::string templ = (std::filesystem::temp_directory_path() / "client-tls-XXXXXX").string();
  check(::mkdtemp(templ.data()) != nullptr, "mkdtemp");
  dir = templ;
  Key ca_key = new_key(), other_key = new_key();
  Cert ca = new_cert(ca_key.get(), "test CA", nullptr, nullptr, "");
  Cert other = new_cert(other_key.get(), "other CA", nullptr, nullptr, "");
  ca_file = dir + "/ca.pem";
  other_ca_file = dir + "/other-ca.pem";
  write_pem(ca_file, ca.get(), nullptr);
  write_pem(other_ca_file, other.get(), nullptr);
  const char* here = "IP:127.0.0.1,IP:::1,DNS:localhost";
  std::tie(server_cert, server_key) = leaf(dir, "server", "server", here, ca.get(), ca_key.get());
  std::tie(client_cert, client_key) =
      leaf(dir, "client", "alice", "DNS:alice", ca.get(), ca_key.get());
  std::tie(stranger_cert, stranger_key) =
      leaf(dir, "stranger", "stranger", here, other.get(), other_key.get());
  std::tie(misnamed_cert, misnamed_key) =
      leaf(dir, "misnamed", "misnamed", "DNS:elsewhere.example", ca.get(), ca_key.get());
}

TestPki::~TestPki() {
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
}

TlsServer::TlsServer(const Options& o, std::function<void(SSL*, int)> serve, int connections) {
  ::signal(SIGPIPE, SIG_IGN);  // a client that hung up must not kill the test program
  ctx_ = SSL_CTX_new(TLS_server_method());
  check(ctx_ != nullptr, "SSL_CTX_new");
  SSL_CTX_set_min_proto_version(ctx_, TLS1_2_VERSION);
  if (o.max_version != 0) SSL_CTX_set_max_proto_version(ctx_, o.max_version);
  check(SSL_CTX_use_certificate_chain_file(ctx_, o.cert.c_str()) == 1 &&
            SSL_CTX_use_PrivateKey_file(ctx_, o.key.c_str(), SSL_FILETYPE_PEM) == 1,
        "loading the server certificate");
  static const unsigned char id[] = "client-tests";
  SSL_CTX_set_session_id_context(ctx_, id, sizeof id - 1);
  if (!o.client_ca.empty()) {
    check(SSL_CTX_load_verify_locations(ctx_, o.client_ca.c_str(), nullptr) == 1, "client CA");
    SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  }
  listen_fd_ = testing_support::listen_loopback(port_, 8);
  thread_ = std::thread([this, serve, connections] {
    for (int i = 0; i < connections; ++i) {
      int fd = ::accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) return;
      serve_one(fd, i, serve);
      ::close(fd);
    }
  });
}

TlsServer::~TlsServer() {
  ::shutdown(listen_fd_, SHUT_RDWR);
  ::close(listen_fd_);
  thread_.join();
  SSL_CTX_free(ctx_);
}

void TlsServer::serve_one(int fd, int i, const std::function<void(SSL*, int)>& serve) {
  timeval limit{3, 0};  // a client that fails must not hang the test
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
  SSL* ssl = SSL_new(ctx_);
  SSL_set_fd(ssl, fd);
  if (SSL_accept(ssl) != 1) {
    ++failed_;
    SSL_free(ssl);
    // What a careful server does: no reset that could destroy the alert before the client
    // reads it; the client's unread bytes are drained until it closes.
    ::shutdown(fd, SHUT_WR);
    char sink[4096];
    while (::read(fd, sink, sizeof sink) > 0) {
    }
    return;
  }
  ++handshakes_;
  if (SSL_session_reused(ssl)) ++resumed_;
  if (X509* peer = SSL_get1_peer_certificate(ssl)) {
    char cn[256] = "";
    X509_NAME_get_text_by_NID(X509_get_subject_name(peer), NID_commonName, cn, sizeof cn);
    std::lock_guard<std::mutex> lock(mutex_);
    client_cn_ = cn;
    X509_free(peer);
  }
  serve(ssl, i);
  SSL_shutdown(ssl);
  SSL_free(ssl);
}

std::string TlsServer::client_cn() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return client_cn_;
}

std::string ssl_read_line(SSL* ssl) {
  std::string line;
  char c;
  while (SSL_read(ssl, &c, 1) == 1 && c != '\n') line += c;
  return line;
}

std::string ssl_read_n(SSL* ssl, std::size_t n) {
  std::string s(n, '\0');
  std::size_t got = 0;
  while (got < n) {
    int r = SSL_read(ssl, &s[got], static_cast<int>(n - got));
    if (r <= 0) break;
    got += static_cast<std::size_t>(r);
  }
  s.resize(got);
  return s;
}

void ssl_write(SSL* ssl, const std::string& bytes) {
  SSL_write(ssl, bytes.data(), static_cast<int>(bytes.size()));
}

}  // namespace client_test

#include "net/tls_bio.hpp"

#include <sys/socket.h>

#include <cerrno>
#include <cstdint>
#include <mutex>

namespace exch::net {

namespace {

int fd_of(BIO* b) { return static_cast<int>(reinterpret_cast<std::intptr_t>(BIO_get_data(b))); }

bool retryable(int err) { return err == EAGAIN || err == EWOULDBLOCK || err == EINTR; }

int bio_write(BIO* b, const char* data, int length) {
  BIO_clear_retry_flags(b);
  ssize_t n = ::send(fd_of(b), data, static_cast<std::size_t>(length), MSG_NOSIGNAL);
  if (n < 0 && retryable(errno)) BIO_set_retry_write(b);
  return static_cast<int>(n);
}

int bio_read(BIO* b, char* data, int length) {
  BIO_clear_retry_flags(b);
  ssize_t n = ::recv(fd_of(b), data, static_cast<std::size_t>(length), 0);
  if (n < 0 && retryable(errno)) BIO_set_retry_read(b);
  if (n == 0) BIO_set_flags(b, BIO_FLAGS_IN_EOF);  // what BIO_eof() reports to the TLS layer
  return static_cast<int>(n);
}

long bio_ctrl(BIO* b, int cmd, long, void*) {
  switch (cmd) {
    case BIO_CTRL_FLUSH:
      return 1;  // nothing is buffered here
    case BIO_CTRL_EOF:
      return BIO_test_flags(b, BIO_FLAGS_IN_EOF) != 0;
    default:
      return 0;
  }
}

int bio_create(BIO* b) {
  BIO_set_init(b, 1);
  return 1;
}

BIO_METHOD* socket_method() {
  static BIO_METHOD* method = nullptr;
  static std::once_flag once;
  std::call_once(once, [] {
    method = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK | BIO_TYPE_DESCRIPTOR,
                          "exchange client socket");
    if (method == nullptr) return;
    BIO_meth_set_write(method, bio_write);
    BIO_meth_set_read(method, bio_read);
    BIO_meth_set_ctrl(method, bio_ctrl);
    BIO_meth_set_create(method, bio_create);
  });
  return method;
}

}  // namespace

BIO* new_socket_bio(int fd) {
  BIO_METHOD* method = socket_method();
  if (method == nullptr) return nullptr;
  BIO* b = BIO_new(method);
  if (b != nullptr) BIO_set_data(b, reinterpret_cast<void*>(static_cast<std::intptr_t>(fd)));
  return b;
}

}  // namespace exch::net

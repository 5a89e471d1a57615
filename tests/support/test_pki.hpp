#pragma once
// Certificates and keys made by the `openssl` command at test time, in a temporary directory
// removed at the end: a CA, the server's certificate (for 127.0.0.1), client certificates of
// that CA (one expired), and one of another CA. Nothing here is a secret of anything.
#include <string>

namespace testing_support {

class TestPki {
 public:
  TestPki();  // throws std::runtime_error if openssl fails
  ~TestPki();
  TestPki(const TestPki&) = delete;
  TestPki& operator=(const TestPki&) = delete;

  // A client certificate of the CA whose subject CN is `name` (made on first use).
  // `expired`: its validity ended yesterday. Returns the base path: PATH.crt and PATH.key.
  std::string client(const std::string& name, bool expired = false);
  // A client certificate of CN `name` signed by another CA that the server does not trust.
  std::string stranger(const std::string& name);

  std::string ca() const { return dir_ + "/ca.crt"; }
  std::string server_cert() const { return dir_ + "/server.crt"; }
  std::string server_key() const { return dir_ + "/server.key"; }
  const std::string& dir() const { return dir_; }

 private:
  // A key and a certificate signed by `ca` ("ca" or "other-ca") at dir_/`base`.
  void issue(const std::string& base, const std::string& cn, const std::string& ca, int days,
             const std::string& extension = {});
  std::string dir_;
};

}  // namespace testing_support

#pragma once
// Background clients that place random orders and cancel their own, one request per
// connection, and remember what the server acknowledged. For tests that disturb the server or
// its database mid-stream and then check that every acknowledgement holds.
#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace testing_support {

struct Acknowledged {
  std::string account;
  bool canceled = false;
};

class RandomTraders {
 public:
  // Accounts are first_account .. first_account + accounts - 1, trading symbol `symbol`.
  RandomTraders(unsigned short port, int clients, int first_account, int accounts,
                std::string symbol, unsigned seed);
  ~RandomTraders();
  // Stops the clients and returns every order id the server acknowledged, with its owner.
  std::map<long long, Acknowledged> stop();
  void set_port(unsigned short port) { port_ = port; }
  // Requests refused as a whole because the database failed (not business errors).
  int error_replies() const { return error_replies_; }
  int acknowledged() const;

 private:
  void trade(int client, unsigned seed);

  std::atomic<unsigned short> port_;
  int first_account_, accounts_;
  std::string symbol_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> error_replies_{0};
  mutable std::mutex mutex_;
  std::map<long long, Acknowledged> acked_;
  std::vector<std::thread> threads_;
};

// Creates the accounts with ample cash and shares of `symbol`.
void create_traders(unsigned short port, int first_account, int accounts,
                    const std::string& symbol);
// Checks through the protocol that every acknowledged order exists (and canceled ones are);
// returns the ids that do not.
std::vector<long long> missing_orders(unsigned short port,
                                      const std::map<long long, Acknowledged>& acked);

}  // namespace testing_support

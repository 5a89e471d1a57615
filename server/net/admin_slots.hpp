#pragma once
// The admin port's connection cap, and who gives way when it is full. A hard cap that refuses
// newcomers lets anyone who opens that many sockets and sends nothing (or a byte now and then:
// slowloris) lock operators out of /healthz until the deadlines expire, and again as soon as
// they reconnect. So at the cap a newcomer takes the slot of the OLDEST connection that has not
// yet sent a whole request: holding sockets open no longer keeps anyone out, and a request
// that arrives promptly (an operator's, a scraper's) is read long before it becomes the oldest.
// Connections already answering keep their slots (the write deadline bounds them); only when
// every slot is answering is the newcomer refused.
//
// Used by the admin thread alone: no locking.
#include <cstddef>
#include <functional>
#include <list>

namespace net {

class AdminSlots {
  struct Holder {
    std::function<void()> close;
    bool answering = false;
  };

 public:
  // Where one connection's slot is; valid until release().
  using Slot = std::list<Holder>::iterator;

  explicit AdminSlots(std::size_t max_open) : max_open_(max_open) {}
  AdminSlots(const AdminSlots&) = delete;
  AdminSlots& operator=(const AdminSlots&) = delete;

  // Whether a newcomer may have a slot now: there is a free one, or the oldest connection still
  // waiting for its request was closed to free one. False when every slot is answering.
  bool make_room();
  // A slot for a new connection; `close` closes it early, and must release() its slot.
  Slot take(std::function<void()> close);
  // Its whole request has arrived: from now on it is answered, never evicted.
  void answering(Slot slot);
  // The connection is closed: its slot is free.
  void release(Slot slot);

  std::size_t open() const { return waiting_.size() + answering_.size(); }

 private:
  std::size_t max_open_;
  std::list<Holder> waiting_;    // oldest first
  std::list<Holder> answering_;  // a slot moves here by splice, so Slot stays valid
};

}  // namespace net

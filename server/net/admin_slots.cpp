#include "net/admin_slots.hpp"

#include <iterator>

namespace net {

bool AdminSlots::make_room() {
  if (open() < max_open_) return true;
  if (waiting_.empty()) return false;
  // A copy: closing releases the slot, which destroys the Holder this function lives in.
  auto close = waiting_.front().close;
  close();
  return open() < max_open_;
}

AdminSlots::Slot AdminSlots::take(std::function<void()> close) {
  waiting_.push_back(Holder{std::move(close), false});
  return std::prev(waiting_.end());
}

void AdminSlots::answering(Slot slot) {
  if (slot->answering) return;
  slot->answering = true;
  answering_.splice(answering_.end(), waiting_, slot);
}

void AdminSlots::release(Slot slot) { (slot->answering ? answering_ : waiting_).erase(slot); }

}  // namespace net

#include "concurrency/thread_set.hpp"

#include <algorithm>

namespace concurrency {

void ThreadSet::spawn(std::function<void()> fn) {
  join_finished();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++live_;
  }
  try {
    boost::thread thread([this, fn = std::move(fn)] {
      fn();
      std::lock_guard<std::mutex> lock(mutex_);
      finished_.push_back(boost::this_thread::get_id());
      if (--live_ == 0) all_done_.notify_all();
    });
    std::lock_guard<std::mutex> lock(mutex_);
    auto id = thread.get_id();
    threads_.emplace(id, std::move(thread));
  } catch (...) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (--live_ == 0) all_done_.notify_all();
    throw;
  }
}

std::size_t ThreadSet::live() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return live_;
}

void ThreadSet::join_all() {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    all_done_.wait(lock, [this] { return live_ == 0; });
  }
  join_finished();
}

void ThreadSet::join_finished() {
  std::vector<boost::thread> done;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // A thread that ended before spawn() recorded it stays listed for the next call.
    auto keep = std::remove_if(finished_.begin(), finished_.end(), [&](boost::thread::id id) {
      auto it = threads_.find(id);
      if (it == threads_.end()) return false;
      done.push_back(std::move(it->second));
      threads_.erase(it);
      return true;
    });
    finished_.erase(keep, finished_.end());
  }
  for (auto& t : done) t.join();  // each has left its function already
}

}  // namespace concurrency

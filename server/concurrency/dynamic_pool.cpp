#include "concurrency/dynamic_pool.hpp"

#include <algorithm>
#include <exception>

#include "util/log.hpp"

namespace concurrency {

DynamicPool::DynamicPool(const Limits& limits, unsigned initial) : limits_(limits) {
  std::unique_lock<std::mutex> lock(mutex_);
  target_ = std::clamp(initial, limits_.min_threads, limits_.max_threads);
  start_threads(lock, target_);
}

DynamicPool::~DynamicPool() { shutdown(); }

void DynamicPool::submit(Task task) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (stopping_ && threads_ == 0) {  // too late for the workers: run it here
    lock.unlock();
    task();
    return;
  }
  queue_.push_back(std::move(task));
  if (queue_.size() > idle_ && threads_ < target_ && !stopping_) start_threads(lock, 1);
  wake_.notify_one();
}

void DynamicPool::resize(unsigned target) {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!stopping_) {
      target_ = std::clamp(target, limits_.min_threads, limits_.max_threads);
      if (threads_ < target_)
        start_threads(lock, target_ - threads_);
      else if (threads_ > target_)
        wake_.notify_all();  // idle surplus threads retire now, busy ones after their task
    }
  }
  workers_.join_finished();
}

void DynamicPool::start_threads(std::unique_lock<std::mutex>& lock, unsigned count) {
  threads_ += count;
  ++starting_;
  // Thread creation takes tens of microseconds each: not under the lock the workers need.
  lock.unlock();
  unsigned made = 0;
  try {
    for (; made < count; ++made) workers_.spawn([this] { work(); });
  } catch (const std::exception& e) {
    EXCHANGE_LOG(warn) << "cannot start a pool thread (" << made << " of " << count
                       << " started): " << e.what();
  }
  lock.lock();
  started_ += made;
  threads_ -= count - made;
  if (--starting_ == 0 && threads_ == 0) all_gone_.notify_all();
}

void DynamicPool::work() {
  std::unique_lock<std::mutex> lock(mutex_);
  auto idle_since = std::chrono::steady_clock::now();
  auto has_news = [this] { return stopping_ || !queue_.empty() || threads_ > target_; };
  for (;;) {
    if (!stopping_ && threads_ > target_) break;  // surplus
    if (!queue_.empty()) {
      Task task = std::move(queue_.front());
      queue_.pop_front();
      ++busy_;
      lock.unlock();
      try {
        task();
      } catch (const std::exception& e) {
        EXCHANGE_LOG(error) << "a request failed in a pool thread: " << e.what();
      }
      task = nullptr;  // its captures go before the lock is taken again
      lock.lock();
      --busy_;
      idle_since = std::chrono::steady_clock::now();
      continue;
    }
    if (stopping_) break;
    ++idle_;
    bool news = true;
    if (limits_.idle_timeout.count() > 0)
      news = wake_.wait_until(lock, idle_since + limits_.idle_timeout, has_news);
    else
      wake_.wait(lock, has_news);
    --idle_;
    if (!news) {
      if (threads_ > limits_.min_threads) break;  // idle too long
      idle_since = std::chrono::steady_clock::now();
    }
  }
  --threads_;
  if (threads_ == 0 && starting_ == 0) all_gone_.notify_all();
}

void DynamicPool::shutdown() {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    stopping_ = true;
    wake_.notify_all();
    all_gone_.wait(lock, [this] { return threads_ == 0 && starting_ == 0; });
  }
  workers_.join_all();  // each has left work() already, or is just leaving it
}

DynamicPool::Stats DynamicPool::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  Stats s;
  s.threads = threads_;
  s.busy = busy_;
  s.queued = queue_.size();
  s.target = target_;
  s.started = started_;
  return s;
}

}  // namespace concurrency

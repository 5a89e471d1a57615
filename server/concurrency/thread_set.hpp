#pragma once
// Threads that end on their own (one per request, one per connection, the workers of a
// DynamicPool), joined rather than detached: a thread that has finished is joined by the next
// spawn() or join_finished(), the rest by join_all().
// Joining keeps shutdown exact (no thread outlives the model) and gives ThreadSanitizer the
// happens-before edge that boost::thread::detach() hides inside the uninstrumented library.
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <map>
#include <mutex>
#include <vector>

#include <boost/thread/thread.hpp>

namespace concurrency {

class ThreadSet {
 public:
  ThreadSet() = default;
  ~ThreadSet() { join_all(); }
  ThreadSet(const ThreadSet&) = delete;
  ThreadSet& operator=(const ThreadSet&) = delete;

  // Runs `fn` on a new thread. Throws what boost::thread throws (thread_resource_error) if
  // the thread cannot be started. Not concurrently with join_all().
  void spawn(std::function<void()> fn);
  // Threads started and not yet finished.
  std::size_t live() const;
  // Joins the threads that have finished (each has left its function already). Any thread.
  void join_finished();
  // Waits until every thread has finished, and joins them all.
  void join_all();

 private:
  mutable std::mutex mutex_;
  std::condition_variable all_done_;
  std::size_t live_ = 0;
  std::map<boost::thread::id, boost::thread> threads_;
  std::vector<boost::thread::id> finished_;  // ended, still to be joined
};

}  // namespace concurrency

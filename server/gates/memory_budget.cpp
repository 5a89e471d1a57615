#include "gates/memory_budget.hpp"

#include <unistd.h>

#include <cstdio>

namespace app {

std::size_t MemoryBudget::read_resident() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  unsigned long size = 0, resident = 0;
  const int got = std::fscanf(f, "%lu %lu", &size, &resident);
  std::fclose(f);
  if (got != 2) return 0;
  return static_cast<std::size_t>(resident) * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
}

void MemoryBudget::refresh() {
  const auto now = std::chrono::steady_clock::now().time_since_epoch();
  const std::int64_t now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(now).count();
  std::int64_t last = read_at_ns_.load(std::memory_order_relaxed);
  if (last != 0 && now_ns - last < std::chrono::nanoseconds(kRefresh).count()) return;
  // One thread reads; the others use the value it had.
  if (!read_at_ns_.compare_exchange_strong(last, now_ns, std::memory_order_relaxed)) return;
  resident_.store(read_resident(), std::memory_order_relaxed);
}

bool MemoryBudget::over() {
  if (limit_ == 0) return false;
  refresh();
  return resident_.load(std::memory_order_relaxed) > limit_;
}

std::size_t MemoryBudget::resident() {
  refresh();
  return resident_.load(std::memory_order_relaxed);
}

}  // namespace app

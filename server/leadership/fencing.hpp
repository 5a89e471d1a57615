#pragma once
// The fencing token: the writer epoch a process was given when it took the lead
// (WriterLock::begin_epoch, writer_epoch in schema.sql). Every journal append and projection
// write carries it, and PostgreSQL checks it inside the write's own statements: a write whose
// token is no longer the current epoch wrote nothing, and never will again. That is not a
// failure to retry: another server took over the database, and this one must step down.
#include <cstdint>
#include <stdexcept>

namespace leadership {

struct FencingToken {
  std::int64_t epoch = 0;
};

// Thrown by a journal append or projection write that found another writer's epoch, and
// reported by the writer lock's keeper when the lock went to another session. what() says who
// took over when that could be read ("another server took over the database (epoch N, ...)").
struct Fenced : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace leadership

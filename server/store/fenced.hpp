#pragma once
// One writer per database (writer_epoch in schema.sql, store/writer_lock.hpp): a write that
// finds the writer epoch is no longer the one this process was given wrote nothing, and never
// will again. It is not a failure to retry or recover from: another server took over the
// database, and this one must stop writing for good and step down.
#include <stdexcept>

namespace store {

// Thrown by a journal append or projection write that found another writer's epoch, and by
// the writer lock's keeper when the lock went to another session. what() says who took over
// when that could be read ("another server took over the database (epoch N, holder ...)").
struct Fenced : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace store

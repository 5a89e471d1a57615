#pragma once
// The application_name of each PostgreSQL session the server opens that leadership must tell
// apart: a new leader ends an earlier writer's projection write that keeps its epoch bump
// waiting at once, and anything else of it only after a grace period (writer_lock.cpp). Tests
// and scripts/profile.py find the sessions by these names too.
namespace leadership {

constexpr const char* kLockSession = "exchange-writer-lock";     // holds the writer lock
constexpr const char* kWatchSession = "exchange-writer-watch";   // lease checks, ending blockers
constexpr const char* kProjectorSession = "exchange-projector";  // the projection's writes

}  // namespace leadership

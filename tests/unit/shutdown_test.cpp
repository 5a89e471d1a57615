// app::Shutdown (lifecycle/shutdown.hpp) and SIGHUP: a reload signal that comes before serving
// is kept and applied when the actions are set (issue 47: on 6f484b8 it was dropped, so a
// principal removed while the server started could log on once it served).
#include "lifecycle/shutdown.hpp"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>

#include <catch2/catch.hpp>

#include "support/checks.hpp"

using testing_support::wait_until;
using namespace std::chrono_literals;

TEST_CASE("a SIGHUP before the actions are set runs the reload when they are", "[unit]") {
  app::Shutdown shutdown{std::chrono::milliseconds(100)};
  std::atomic<int> reloads{0};
  REQUIRE(::kill(::getpid(), SIGHUP) == 0);
  REQUIRE(wait_until([&] { return shutdown.reload_pending(); }, 5s));
  shutdown.set_actions([] {}, [] {}, [&] { ++reloads; });
  CHECK(reloads == 1);  // at once, on the thread that set the actions: before serving
  CHECK_FALSE(shutdown.reload_pending());
  // Later ones run as they come.
  REQUIRE(::kill(::getpid(), SIGHUP) == 0);
  CHECK(wait_until([&] { return reloads == 2; }, 5s));
  shutdown.finished();
  CHECK_FALSE(shutdown.stop_flag().requested());
}

TEST_CASE("block_signals keeps a SIGHUP that comes before the Shutdown exists", "[unit]") {
  app::Shutdown::block_signals();
  REQUIRE(::kill(::getpid(), SIGHUP) == 0);  // would end the process if it were not blocked
  app::Shutdown shutdown{std::chrono::milliseconds(100)};
  REQUIRE(wait_until([&] { return shutdown.reload_pending(); }, 5s));
  int reloads = 0;
  shutdown.set_actions([] {}, [] {}, [&] { ++reloads; });
  CHECK(reloads == 1);
  shutdown.finished();
}

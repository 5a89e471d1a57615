// exchange-replay: the whole journal replayed from its first entry on a fresh engine, by the
// engine's own rules (app::replay_entry, as a restart replays), printing the reply each entry
// gets as one JSON line: {"seq": N, "reply": "<results>...</results>"}. The chaos runner
// (scripts/chaos.py) compares these with the replies its clients were given: a reference model
// that is the engine itself, independent of everything between the journal and the client.
//
//   exchange-replay --db URL [--db-timeout-ms 5000] [--final-state FILE]
//
// --final-state writes the state the replay ends in (accounts, positions, orders, executions;
// tools/final_state.hpp), which the checker compares with the projected tables.
//
// Exit 0 when the journal was replayed to its end, 1 if it could not be read or diverged, 2 on
// bad flags. The journal must start at seq 1 (the server's --journal-keep 0, the default).
#include <chrono>
#include <fstream>
#include <iostream>
#include <string>

#include "app/replay.hpp"
#include "protocol/render.hpp"
#include "store/pg_store.hpp"
#include "tools/final_state.hpp"
#include "tools/json_text.hpp"

namespace {

int usage(const char* why) {
  std::cerr << "exchange-replay: " << why
            << "\nusage: exchange-replay --db URL [--db-timeout-ms MS] [--final-state FILE]\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string db;
  std::string final_state_path;
  long timeout_ms = 5000;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::cout << "usage: exchange-replay --db URL [--db-timeout-ms MS] [--final-state FILE]\n"
                   "Replays the whole journal on a fresh engine and prints each entry's reply "
                   "as a JSON line {\"seq\": N, \"reply\": \"...\"}.\n"
                   "--final-state FILE: also write the state the replay ends in as JSON.\n";
      return 0;
    }
    if (i + 1 >= argc) return usage(("missing value for " + arg).c_str());
    if (arg == "--db") {
      db = argv[++i];
    } else if (arg == "--db-timeout-ms") {
      try {
        timeout_ms = std::stol(argv[++i]);
      } catch (const std::exception&) {
        return usage("--db-timeout-ms needs a number of milliseconds");
      }
    } else if (arg == "--final-state") {
      final_state_path = argv[++i];
    } else {
      return usage(("unknown flag " + arg).c_str());
    }
  }
  if (db.empty()) return usage("--db is required");
  try {
    store::PgStore store(db, std::chrono::milliseconds(timeout_ms));
    auto reader = store.state_reader();
    market::Engine engine;
    tools::FinalState final_state;
    std::int64_t after = 0;
    for (;;) {
      const auto entries = reader->read_journal(after, 10000);
      if (entries.empty()) break;
      for (const store::JournalEntry& entry : entries) {
        if (entry.seq != after + 1)
          throw std::runtime_error("the journal has no seq " + std::to_string(after + 1) +
                                   " (trimmed?): it must be replayed from its start");
        market::Effects fx;
        const std::string reply = protocol::render(app::replay_entry(entry, engine, fx));
        final_state.absorb(fx);
        std::cout << "{\"seq\": " << entry.seq << ", \"reply\": " << tools::json_string(reply)
                  << "}\n";
        after = entry.seq;
      }
    }
    if (!final_state_path.empty()) {
      std::ofstream out(final_state_path);
      final_state.write_json(out);
      if (!out.flush()) throw std::runtime_error("cannot write " + final_state_path);
    }
    std::cerr << "exchange-replay: replayed " << after << " journal entries\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "exchange-replay: " << e.what() << "\n";
    return 1;
  }
}

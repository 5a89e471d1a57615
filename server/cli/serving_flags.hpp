#pragma once
// The flags exchange-server and exchange-floor share (port, address, database, concurrency
// model and its threads, log level) with their checks. One copy, so the floor the benchmark
// compares with is always served exactly as the server is; cli::serve (serve.hpp) runs the
// rest of the process for both.
#include <optional>
#include <string>

#include "cli/security.hpp"
#include "concurrency/model.hpp"
#include "store/batcher.hpp"
#include "util/settings.hpp"

namespace cli {

// Each binary sets its own defaults before declare_serving_settings().
struct ServingFlags {
  unsigned port = 12345;
  // Local unless asked: another address needs --principals or --allow-unauthenticated.
  std::string bind = "127.0.0.1";
  std::string db;
  std::string model = "pool";
  unsigned threads = 4;
  unsigned min_threads = 4;
  unsigned max_threads = 1024;
  std::string log_level = "info";
  // The group commit's gathering under load (store::CommitGather): --commit-wait-us,
  // --commit-batch.
  unsigned commit_wait_us = 300;
  unsigned commit_batch = 32;
  SecurityFlags security;  // --tls-..., --principals, --allow-unauthenticated, --logon-...
  Security loaded;         // what finish_serving_flags built from `security`
};

// The group commit's gathering the flags ask for.
store::CommitGather commit_gather(const ServingFlags& flags);

// Declares --port, --bind, --db, --concurrency, --threads, --min-threads, --max-threads,
// --commit-wait-us, --commit-batch, --log-level and the security settings (cli/security.hpp);
// `bind_help` and `db_help` say what the address and the database are in this binary.
void declare_serving_settings(util::Settings& settings, ServingFlags& flags,
                              const std::string& bind_help, const std::string& db_help);

// Once parsed (cli/settings_parser.hpp): takes $DATABASE_URL when --db is absent, checks what
// one setting's range cannot (the model's name, the log level, the thread counts together),
// sets the log level and loads the security files into flags.loaded. Returns 2 after logging
// what is wrong, or nullopt.
std::optional<int> finish_serving_flags(ServingFlags& flags);

// ModelOptions with the flags' thread counts (the rest at their defaults).
concurrency::ModelOptions model_options(const ServingFlags& flags);

}  // namespace cli

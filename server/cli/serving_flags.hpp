#pragma once
// The flags exchange-server and exchange-floor share (port, address, database, concurrency
// model and its threads, log level) with their checks. One copy, so the floor the benchmark
// compares with is always served exactly as the server is; cli::serve (serve.hpp) runs the
// rest of the process for both.
#include <optional>
#include <string>

#include <boost/program_options.hpp>

#include "cli/security.hpp"
#include "concurrency/model.hpp"
#include "store/batcher.hpp"

namespace cli {

// Each binary sets its own defaults before add_serving_flags().
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
  Security loaded;         // what parse_serving_flags built from `security`
};

// The group commit's gathering the flags ask for.
store::CommitGather commit_gather(const ServingFlags& flags);

// Adds --help, --port, --bind, --db, --concurrency, --threads, --min-threads, --max-threads,
// --commit-wait-us, --commit-batch, --log-level and the security flags (cli/security.hpp);
// `bind_help` and `db_help` say what the address and the database are in this binary.
void add_serving_flags(boost::program_options::options_description& opts, ServingFlags& flags,
                       const std::string& bind_help, const std::string& db_help);

// Parses `all` (the --help text shows only `visible`), takes $DATABASE_URL when --db is absent,
// checks the serving flags, sets the log level and loads the security files into
// flags.loaded. Returns the exit status when the process
// should end now (0 after --help, 2 after printing what is wrong).
std::optional<int> parse_serving_flags(int argc, char** argv,
                                       const boost::program_options::options_description& visible,
                                       const boost::program_options::options_description& all,
                                       ServingFlags& flags);

// ModelOptions with the flags' thread counts (the rest at their defaults).
concurrency::ModelOptions model_options(const ServingFlags& flags);

}  // namespace cli

#pragma once
// What exchange-server and exchange-floor share as processes: the serving flags (port,
// address, database, concurrency model and its threads, log level) with their checks, the
// descriptor limit, and the exit status after a shutdown. One copy, so the floor the benchmark
// compares with is always served exactly as the server is.
#include <sys/resource.h>

#include <optional>
#include <string>

#include <boost/program_options.hpp>

#include "app/shutdown.hpp"
#include "concurrency/model.hpp"

namespace cli {

// Each binary sets its own defaults before add_serving_flags().
struct ServingFlags {
  unsigned port = 12345;
  // Local unless asked: the protocol has no authentication (--bind 0.0.0.0 serves every
  // interface, with a warning).
  std::string bind = "127.0.0.1";
  std::string db;
  std::string model = "pool";
  unsigned threads = 4;
  unsigned min_threads = 4;
  unsigned max_threads = 1024;
  std::string log_level = "info";
};

// Adds --help, --port, --bind, --db, --concurrency, --threads, --min-threads, --max-threads and
// --log-level; `bind_help` and `db_help` say what the address and the database are in this
// binary.
void add_serving_flags(boost::program_options::options_description& opts, ServingFlags& flags,
                       const std::string& bind_help, const std::string& db_help);

// Parses `all` (the --help text shows only `visible`), takes $DATABASE_URL when --db is absent,
// checks the serving flags and sets the log level. Returns the exit status when the process
// should end now (0 after --help, 2 after printing what is wrong).
std::optional<int> parse_serving_flags(int argc, char** argv,
                                       const boost::program_options::options_description& visible,
                                       const boost::program_options::options_description& all,
                                       ServingFlags& flags);

// ModelOptions with the flags' thread counts (the rest at their defaults).
concurrency::ModelOptions model_options(const ServingFlags& flags);

// Each connection holds a descriptor, so the usual soft limit of 1024 would be hit long before
// --max-connections: raises it to the hard limit, and warns if even that is below `needed`.
void raise_descriptor_limit(rlim_t needed);

// The exit status after `error` ended start-up or serving: 4 if the process stepped down
// (another server took over its database), 0 if a stop had been requested (a shutdown while
// PostgreSQL was still awaited; logged as a warning), otherwise 1 (logged).
int fatal_status(const app::Shutdown& shutdown, const std::exception& error);

// The exit status once serving ended: 4 (logged) when it stepped down because another server
// took over its database, 3 (logged) when the shutdown's grace period ran out with requests
// still waiting, otherwise 0.
int exit_status(const app::Shutdown& shutdown);

}  // namespace cli

#include "cli/serving_flags.hpp"

#include <cstdlib>
#include <iostream>

#include "util/log.hpp"

namespace cli {
namespace {

std::string models_help() {
  std::string out = "concurrency model:";
  for (const auto& m : concurrency::all_models()) out += "\n  " + m.name + ": " + m.description;
  return out;
}

}  // namespace

void declare_serving_settings(util::Settings& s, ServingFlags& flags, const std::string& bind_help,
                              const std::string& db_help) {
  const std::string group = "Serving";
  s.add("port", group, &flags.port).at_most(65535).help("TCP port to listen on");
  s.add("bind", group, &flags.bind).help(bind_help);
  s.add("db", group, &flags.db).no_default().help(db_help);
  s.add("concurrency", group, &flags.model).help(models_help());
  s.add("threads", group, &flags.threads)
      .at_least(1)
      .help("worker threads of the fixed pool (--concurrency pool)");
  s.add("min-threads", group, &flags.min_threads)
      .help(
          "fewest threads of the self-sizing pools (fotp, adaptive; adaptive also keeps at "
          "least one per core)");
  s.add("max-threads", group, &flags.max_threads)
      .at_least(1)
      .help("most threads of the self-sizing pools (fotp, adaptive)");
  s.add("commit-wait-us", group, &flags.commit_wait_us)
      .at_most(100000)
      .unit("µs")
      .help(
          "how long at most the group commit lets a batch smaller than the one before it fill "
          "(to that size, at most --commit-batch) before writing it: fewer, larger commits cost "
          "PostgreSQL less per request; an idle server never waits; 0: write each batch at once");
  s.add("commit-batch", group, &flags.commit_batch)
      .between(1, 100000)
      .help("the most requests a batch is left to fill to (--commit-wait-us)");
  s.add("log-level", group, &flags.log_level)
      .help("error | warn | info | debug (debug shows every pool resize)");
  declare_security_settings(s, flags.security);
}

std::optional<int> finish_serving_flags(ServingFlags& flags) {
  if (flags.db.empty()) {
    const char* env = std::getenv("DATABASE_URL");
    if (env) flags.db = env;
  }
  util::LogLevel level;
  std::string problem;
  if (flags.db.empty())
    problem = "no database: pass --db or set DATABASE_URL";
  else if (!concurrency::find_model(flags.model))
    problem = "unknown --concurrency '" + flags.model + "'\n" + models_help();
  else if (!util::parse_log_level(flags.log_level, level))
    problem = "--log-level must be error, warn, info or debug";
  else if (flags.min_threads > flags.max_threads)
    problem = "--min-threads must be at most --max-threads";
  if (!problem.empty()) {
    EXCHANGE_LOG(error) << problem;
    return 2;
  }
  util::set_log_level(level);
  if (auto security = load_security(flags.security, flags.bind, flags.loaded)) {
    EXCHANGE_LOG(error) << *security;
    return 2;
  }
  return std::nullopt;
}

concurrency::ModelOptions model_options(const ServingFlags& flags) {
  concurrency::ModelOptions options;
  options.threads = flags.threads;
  options.min_threads = flags.min_threads;
  options.max_threads = flags.max_threads;
  return options;
}

store::CommitGather commit_gather(const ServingFlags& flags) {
  return {std::chrono::microseconds(flags.commit_wait_us), flags.commit_batch};
}

}  // namespace cli

#include "cli/serving_flags.hpp"

#include <cstdlib>
#include <iostream>

#include "util/log.hpp"

namespace po = boost::program_options;

namespace cli {
namespace {

std::string models_help() {
  std::string out = "concurrency model:";
  for (const auto& m : concurrency::all_models()) out += "\n  " + m.name + ": " + m.description;
  return out;
}

}  // namespace

void add_serving_flags(po::options_description& opts, ServingFlags& flags,
                       const std::string& bind_help, const std::string& db_help) {
  opts.add_options()("help,h", "show this help and exit")(
      "port", po::value(&flags.port)->default_value(flags.port), "TCP port to listen on")(
      "bind", po::value(&flags.bind)->default_value(flags.bind), bind_help.c_str())(
      "db", po::value(&flags.db), db_help.c_str())(
      "concurrency", po::value(&flags.model)->default_value(flags.model), models_help().c_str())(
      "threads", po::value(&flags.threads)->default_value(flags.threads),
      "worker threads of the fixed pool (--concurrency pool)")(
      "min-threads", po::value(&flags.min_threads)->default_value(flags.min_threads),
      "fewest threads of the self-sizing pools (fotp, adaptive; adaptive also keeps at least "
      "one per core)")("max-threads",
                       po::value(&flags.max_threads)->default_value(flags.max_threads),
                       "most threads of the self-sizing pools (fotp, adaptive)")(
      "commit-wait-us", po::value(&flags.commit_wait_us)->default_value(flags.commit_wait_us),
      "how long at most the group commit lets a batch smaller than the one before it fill (to "
      "that size, at most --commit-batch) before writing it: fewer, larger commits cost "
      "PostgreSQL less per request; an idle server never waits; 0: write each batch at once")(
      "commit-batch", po::value(&flags.commit_batch)->default_value(flags.commit_batch),
      "the most requests a batch is left to fill to (--commit-wait-us)")(
      "log-level", po::value(&flags.log_level)->default_value(flags.log_level),
      "error | warn | info | debug (debug shows every pool resize)");
  add_security_flags(opts, flags.security);
}

std::optional<int> parse_serving_flags(int argc, char** argv,
                                       const po::options_description& visible,
                                       const po::options_description& all, ServingFlags& flags) {
  po::variables_map vm;
  try {
    po::store(po::parse_command_line(argc, argv, all), vm);
    po::notify(vm);
  } catch (const std::exception& e) {
    EXCHANGE_LOG(error) << e.what() << " (try --help)";
    return 2;
  }
  if (vm.count("help")) {
    std::cout << visible << "\n";
    return 0;
  }
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
  else if (flags.port > 65535)
    problem = "--port must be at most 65535";
  else if (!util::parse_log_level(flags.log_level, level))
    problem = "--log-level must be error, warn, info or debug";
  else if (flags.max_threads < 1 || flags.min_threads > flags.max_threads)
    problem = "need 1 <= --max-threads and --min-threads <= --max-threads";
  else if (flags.commit_wait_us > 100000)
    problem = "--commit-wait-us must be at most 100000 (every reply under load waits for it)";
  else if (flags.commit_batch < 1 || flags.commit_batch > 100000)
    problem = "--commit-batch must be between 1 and 100000";
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

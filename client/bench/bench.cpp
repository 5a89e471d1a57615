#include "bench/bench.hpp"

#include <algorithm>
#include <cctype>
#include <iostream>

#include "bench/executor.hpp"
#include "bench/loops.hpp"
#include "bench/options.hpp"
#include "bench/report.hpp"
#include "bench/runner.hpp"
#include "bench/workload.hpp"
#include "connect_flags.hpp"
#include "net/framing.hpp"

namespace exch::bench {

namespace {

bool contains_ci(const std::string& text, const char* word) {
  std::string t = text;
  for (char& c : t) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return t.find(word) != std::string::npos;
}

// Creates the trading accounts and symbols on every target; "already exists"
// is fine (reruns). Throws NetError if a target cannot be reached.
SetupSummary run_setup(const BenchOptions& o, Targets& targets, Workload& workload) {
  SetupSummary s;
  s.ran = true;
  TimeBase tb;
  for (const Request& request : workload.setup_requests()) {
    for (std::size_t t = 0; t < targets.size(); ++t) {
      ++s.requests;
      TargetResult r = targets.exchange(t, request.create_xml, tb);
      if (!r.ok) throw net::NetError("setup failed: " + r.error);
      auto root = parse_xml(r.body);
      if (!root || root->name != "results") {
        ++s.errors;
        if (s.first_error.empty())
          s.first_error = "unexpected reply: " + net::printable_excerpt(r.body);
        continue;
      }
      for (const XmlNode& c : root->children) {
        if (c.name != "error") {
          ++s.created;
        } else if (contains_ci(c.text, "already exist")) {
          ++s.already_existed;
        } else {
          ++s.errors;
          if (s.first_error.empty()) s.first_error = c.text;
        }
      }
    }
  }
  if (o.workload == WorkloadKind::Query) {
    // Orders to query later: one batch per account, ids learned from replies.
    Rng rng(o.seed, 0x5EEDull << 40);
    Executor executor(targets, executor_mode(false, targets.size()), tb);
    for (const Request& request : workload.seed_order_requests(rng)) {
      std::vector<std::string> payloads;
      for (std::size_t t = 0; t < targets.size(); ++t) payloads.push_back(request.render(t));
      std::vector<TargetResult> results;
      executor.run(payloads, results);
      std::vector<ReplyVerdict> verdicts(targets.size());
      std::vector<const ReplyVerdict*> learned;
      for (std::size_t t = 0; t < targets.size(); ++t) {
        if (!results[t].ok) throw net::NetError("setup failed: " + results[t].error);
        verdicts[t] = classify_reply(results[t].body, request.kinds(), o.reject_words);
        learned.push_back(&verdicts[t]);
      }
      s.requests += targets.size();
      workload.learn(request, learned);
    }
    s.seed_orders = workload.id_pool_size();
  }
  s.seconds = static_cast<double>(tb.now_ns()) / 1e9;
  return s;
}

}  // namespace

int run_bench(int argc, const char* const* argv) {
  BenchOptions o;
  ParseOutcome parsed = parse_bench_options(argc, argv, o);
  if (parsed.kind == ParseOutcome::Help) {
    print_bench_help(std::cout);
    return 0;
  }
  if (parsed.kind == ParseOutcome::Error) {
    std::cerr << "exchange-client bench: " << parsed.message
              << "\n(see exchange-client bench --help)\n";
    return 2;
  }

  std::vector<Targets::HostPort> host_ports;
  const auto& listed = o.servers.empty() ? o.replicas : o.servers;
  try {
    if (listed.empty()) {
      host_ports.emplace_back(o.host, o.port);
    } else {
      for (const auto& r : listed) {
        std::string host;
        std::uint16_t port = 0;
        net::split_host_port(r, o.port, host, port);
        host_ports.emplace_back(host, port);
      }
    }
  } catch (const std::exception& e) {
    std::cerr << "exchange-client bench: " << (o.servers.empty() ? "--replicas" : "--servers")
              << ": " << e.what() << "\n";
    return 2;
  }

  net::Timeouts timeouts;
  timeouts.connect = std::chrono::milliseconds(static_cast<long long>(o.connect_timeout_s * 1000));
  timeouts.read = std::chrono::milliseconds(static_cast<long long>(o.timeout_s * 1000));
  net::ConnectOptions connect;
  try {
    connect = make_connect_options(o.security, timeouts);
  } catch (const std::exception& e) {
    std::cerr << "exchange-client bench: " << e.what() << "\n";
    return 1;
  }

  std::unique_ptr<Targets> targets;
  std::vector<std::string> target_names;
  SetupSummary setup;
  Workload workload(o);
  try {
    if (o.servers.empty())
      targets = std::make_unique<Targets>(host_ports, connect, o.persistent);
    else
      targets = Targets::failover(
          host_ports, connect, o.persistent,
          std::chrono::milliseconds(static_cast<long long>(o.failover_wait_s * 1000)));
    for (std::size_t t = 0; t < targets->size(); ++t) target_names.push_back(targets->name(t));
    // Fail fast on a wrong address, certificate or key, or a server without sessions (the
    // setup requests do that job for one-request-per-connection runs). A logon is tried alone
    // first: a refusal then closes a connection with nothing unread, so the answer arrives
    // whole (a server closing on a pipelined request may reset the connection instead).
    if (o.persistent || !o.setup || connect.credentials.present()) targets->preflight();
    if (o.setup) {
      if (o.progress)
        std::cerr << "setup: " << o.accounts << " accounts, " << o.symbols << " symbols ...\n";
      setup = run_setup(o, *targets, workload);
      if (setup.errors > 0)
        std::cerr << "warning: " << setup.errors
                  << " setup items failed; first: " << setup.first_error << "\n";
    }
  } catch (const std::exception& e) {
    std::cerr << "exchange-client bench: " << e.what() << "\n";
    return 1;
  }
  if (o.setup_only) {
    print_summary(std::cout, o, target_names, setup, {});
    return setup.errors > 0 ? 1 : 0;
  }

  CsvWriter csv;
  std::string error;
  if (!o.csv_path.empty() && !csv.open(o.csv_path, error)) {
    std::cerr << "exchange-client bench: " << error << "\n";
    return 1;
  }

  install_interrupt_handler();
  std::vector<RepSummary> reps;
  for (unsigned rep = 1; rep <= o.repeat; ++rep) {
    SessionMeter sessions(*targets);  // every repetition opens its own sessions
    const auto tls_before = targets->tls_handshakes();
    RunContext ctx(o, *targets, workload, rep);
    {
      Progress progress(ctx, o.progress);
      if (o.mode == LoopMode::Closed)
        run_closed_loop(ctx);
      else
        run_open_loop(ctx);
    }
    if (ctx.aborted()) {
      std::cerr << "exchange-client bench: aborted: " << ctx.abort_reason() << "\n";
      return 1;
    }
    std::vector<Sample> samples = ctx.take_samples();
    RepSummary r = summarize_rep(rep, samples);
    r.sessions_opened = sessions.opened();
    const auto tls_after = targets->tls_handshakes();
    r.tls_handshakes = tls_after.handshakes - tls_before.handshakes;
    r.tls_resumed = tls_after.resumed - tls_before.resumed;
    r.error_examples = ctx.error_examples();
    r.rejected_reasons = ctx.rejected_reasons();
    r.error_reasons = ctx.error_reasons();
    csv.write(rep, samples);
    reps.push_back(std::move(r));
    if (interrupted()) {
      std::cerr << "exchange-client bench: interrupted; reporting what was measured\n";
      break;
    }
  }

  print_summary(std::cout, o, target_names, setup, reps);
  bool ok = true;
  if (!csv.close(error)) {
    std::cerr << "exchange-client bench: " << error << "\n";
    ok = false;
  }
  if (!o.json_path.empty() && !write_json(o.json_path, o, target_names, setup, reps, error)) {
    std::cerr << "exchange-client bench: " << error << "\n";
    ok = false;
  }
  bool served = std::any_of(reps.begin(), reps.end(),
                            [](const RepSummary& r) { return r.ok + r.rejected > 0; });
  if (!served) {
    std::cerr << "exchange-client bench: no request was served\n";
    ok = false;
  }
  return ok ? 0 : 1;
}

}  // namespace exch::bench

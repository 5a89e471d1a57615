#include "bench/report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <limits>
#include <map>
#include <ostream>
#include <sstream>

#include "connect_flags.hpp"

namespace exch::bench {

RepSummary summarize_rep(unsigned rep, const std::vector<Sample>& samples) {
  RepSummary r;
  r.rep = rep;
  std::vector<double> latency, first;
  std::map<unsigned, std::vector<double>> latency_by_class;
  std::int64_t begin = std::numeric_limits<std::int64_t>::max();
  std::int64_t end = std::numeric_limits<std::int64_t>::min();
  for (const Sample& s : samples) {
    if (s.warmup) {
      ++r.warmup_requests;
      continue;
    }
    ++r.requests;
    begin = std::min(begin, s.intended_ns);
    if (s.status != Status::Dropped) end = std::max(end, s.end_ns);
    r.replica_failures += s.replica_failures;
    if (s.agree == 0) ++r.disagreements;
    switch (s.status) {
      case Status::Ok:
        ++r.ok;
        break;
      case Status::Rejected:
        ++r.rejected;
        break;
      case Status::ErrorReply:
        ++r.error_replies;
        break;
      case Status::ConnError:
        ++r.conn_errors;
        break;
      case Status::Dropped:
        ++r.dropped;
        break;
    }
    if (!s.served()) continue;
    r.items += s.items;
    r.items_rejected += s.items_rejected;
    r.items_error += s.items_error;
    latency.push_back(static_cast<double>(s.end_ns - s.intended_ns) / 1e6);
    latency_by_class[s.items].push_back(latency.back());
    first.push_back(static_cast<double>(s.first_ns - s.intended_ns) / 1e6);
  }
  if (end > begin) r.completion_s = static_cast<double>(end - begin) / 1e9;
  if (r.completion_s > 0) {
    r.throughput_rps = static_cast<double>(r.ok + r.rejected) / r.completion_s;
    r.throughput_items_ps = static_cast<double>(r.items) / r.completion_s;
  }
  r.latency_ms = stats::summarize(std::move(latency));
  r.first_latency_ms = stats::summarize(std::move(first));
  for (auto& [children, samples] : latency_by_class)
    r.by_class.push_back({children, stats::summarize(std::move(samples))});
  return r;
}

namespace {

std::string fixed(double v, int digits) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(digits) << v;
  return s.str();
}

std::string percent(double share) { return fixed(share * 100.0, 2) + "%"; }

constexpr std::size_t kTopReasons = 5;  // reasons named in the report; the rest is "other"

std::string loop_description(const BenchOptions& o) {
  std::ostringstream s;
  if (o.mode == LoopMode::Closed) {
    s << "closed loop, " << o.clients << (o.clients == 1 ? " client" : " clients");
    if (o.think_ms > 0) s << ", think " << o.think_ms << " ms (exp.)";
  } else {
    s << "open loop, Poisson " << o.rate << " req/s, ";
    if (o.threads == ThreadMode::Pool) s << o.senders << " senders, ";
    s << "in-flight cap " << o.max_inflight;
  }
  s << ", " << (o.threads == ThreadMode::Pool ? "thread pool" : "thread per request");
  s << ", " << (o.persistent ? "persistent sessions" : "one request per connection");
  // How it connects and who it logs on as (never the key).
  if (o.security.tls || !o.security.principal.empty()) s << ", " << describe_security(o.security);
  return s.str();
}

// " (IOC 30.00%, market 10.00%, replace 10.00% of the children)", or "" without --ioc-ratio,
// --market-ratio and --replace-ratio.
std::string order_types_description(const BenchOptions& o) {
  const OrderTypeMix& m = o.order_types;
  if (!m.any()) return "";
  std::ostringstream s;
  s << " (IOC " << percent(m.ioc) << ", market " << percent(m.market) << ", replace "
    << percent(m.replace) << " of the children)";
  return s.str();
}

struct Aggregate {
  const char* name;
  const char* unit;
  double (*get)(const RepSummary&);
};

const Aggregate kAggregates[] = {
    {"throughput", "requests/s", [](const RepSummary& r) { return r.throughput_rps; }},
    {"items", "items/s", [](const RepSummary& r) { return r.throughput_items_ps; }},
    {"completion", "s", [](const RepSummary& r) { return r.completion_s; }},
    {"latency mean", "ms", [](const RepSummary& r) { return r.latency_ms.mean; }},
    {"latency p50", "ms", [](const RepSummary& r) { return r.latency_ms.p50; }},
    {"latency p99", "ms", [](const RepSummary& r) { return r.latency_ms.p99; }},
};

stats::MeanCI aggregate(const std::vector<RepSummary>& reps, const Aggregate& a) {
  std::vector<double> v;
  for (const auto& r : reps) v.push_back(a.get(r));
  return stats::mean_ci95(v);
}

}  // namespace

void print_summary(std::ostream& os, const BenchOptions& o, const std::vector<std::string>& targets,
                   const SetupSummary& setup, const std::vector<RepSummary>& reps) {
  const bool replicas = targets.size() > 1;
  os << "exchange-client bench: workload " << to_string(o.workload) << order_types_description(o)
     << ", " << loop_description(o) << "\n";
  os << "target" << (replicas ? "s (replicas)" : "") << ":";
  for (const auto& t : targets) os << " " << t;
  os << "\nrun id " << o.run_id << ", seed " << o.seed;
  if (!o.label.empty()) os << ", label \"" << o.label << "\"";
  os << "\n";
  if (setup.ran) {
    os << "setup: " << setup.requests << " requests, " << setup.created << " items created, "
       << setup.already_existed << " already existed, " << setup.errors << " other errors";
    if (setup.seed_orders) os << ", " << setup.seed_orders << " orders placed for queries";
    os << ", " << fixed(setup.seconds, 3) << " s\n";
    if (!setup.first_error.empty()) os << "  first setup error: " << setup.first_error << "\n";
  }
  for (const RepSummary& r : reps) {
    os << "\n";
    if (reps.size() > 1) os << "repetition " << r.rep << " of " << reps.size() << "\n";
    os << "  requests      " << r.requests << " measured";
    if (r.warmup_requests) os << " (+" << r.warmup_requests << " in warm-up, excluded)";
    os << ": ok " << r.ok << ", rejected " << r.rejected << ", error replies " << r.error_replies
       << ", connection errors " << r.conn_errors;
    if (o.mode == LoopMode::Open) os << ", dropped " << r.dropped;
    os << "\n";
    if (r.rejected_reasons.total() > 0)
      os << "  rejected      " << r.rejected << " requests, " << r.rejected_reasons.total()
         << " items; by reason: " << describe_reasons(r.rejected_reasons, kTopReasons) << "\n";
    if (r.error_reasons.total() > 0)
      os << "  error replies " << r.error_replies << " requests, " << r.error_reasons.total()
         << " items; by reason: " << describe_reasons(r.error_reasons, kTopReasons) << "\n";
    os << "  items         " << r.items << " in served requests (rejected " << r.items_rejected
       << ", errors " << r.items_error << ")\n";
    os << "  completion    " << fixed(r.completion_s, 3) << " s\n";
    os << "  throughput    " << fixed(r.throughput_rps, 1) << " requests/s, "
       << fixed(r.throughput_items_ps, 1) << " items/s\n";
    auto line = [&](const char* what, const stats::Summary& s) {
      os << "  " << what << " p50 " << fixed(s.p50, 3) << "  p90 " << fixed(s.p90, 3) << "  p95 "
         << fixed(s.p95, 3) << "  p99 " << fixed(s.p99, 3) << "  p99.9 " << fixed(s.p999, 3)
         << "  max " << fixed(s.max, 3) << "  (n " << s.count << ")\n";
    };
    line(replicas ? "vote ms      " : "latency ms   ", r.latency_ms);
    if (replicas) line("first ms     ", r.first_latency_ms);
    if (!o.class_mix.empty()) {
      for (const ClassLatency& c : r.by_class) {
        std::ostringstream name;
        name << "  " << std::left << std::setw(4) << c.children << "children";
        line(name.str().c_str(), c.latency_ms);
      }
    }
    os << "  jitter"
       << (replicas ? "                     all replies  first reply\n"
                    : "                     round trip\n");
    auto row = [&](const char* name, double a, double b, bool share) {
      os << "    " << std::left << std::setw(27) << name << std::right << std::setw(11)
         << (share ? percent(a) : fixed(a, 3));
      if (replicas) os << std::setw(13) << (share ? percent(b) : fixed(b, 3));
      os << "\n";
    };
    const auto& j = r.latency_ms.jitter;
    const auto& f = r.first_latency_ms.jitter;
    row("average (ms)", j.mean, f.mean, false);
    row("standard deviation (ms)", j.stddev, f.stddev, false);
    row("beyond average + 2 sd", j.beyond_2sigma, f.beyond_2sigma, true);
    row("beyond average + 3 sd", j.beyond_3sigma, f.beyond_3sigma, true);
    row("beyond average + 4 sd", j.beyond_4sigma, f.beyond_4sigma, true);
    if (replicas)
      os << "  replicas      " << r.disagreements << " disagreements, " << r.replica_failures
         << " replica failures\n";
    if (o.persistent) {
      // Every repetition starts with no session open (SessionMeter): this counts the
      // repetition's own, warm-up included.
      os << "  sessions      " << r.sessions_opened
         << " opened in this repetition, warm-up included ("
         << (o.mode == LoopMode::Closed      ? "one per client that sent"
             : o.threads == ThreadMode::Pool ? "one per sender thread that sent"
                                             : "as many as requests were in flight at once")
         << ", plus one per reconnection after a failure)\n";
    }
    if (o.security.tls)
      os << "  tls handshakes " << r.tls_handshakes << " (" << r.tls_resumed
         << " resumed) in this repetition, warm-up included\n";
    for (const auto& e : r.error_examples) os << "  error example " << e << "\n";
  }
  if (reps.size() > 1) {
    os << "\nacross " << reps.size()
       << " repetitions (mean +- half-width of the 95% confidence interval, Student t):\n";
    for (const auto& a : kAggregates) {
      auto ci = aggregate(reps, a);
      os << "  " << std::left << std::setw(14) << a.name << std::right << fixed(ci.mean, 3)
         << " +- " << fixed(ci.half_width, 3) << " " << a.unit;
      if (ci.mean != 0)
        os << "  (+-" << fixed(100.0 * ci.half_width / std::fabs(ci.mean), 1) << "%)";
      os << "\n";
    }
  }
}

namespace {

class Json {
 public:
  explicit Json(std::ostream& os) : os_(os) {}
  void begin_object(const char* key = nullptr) { open(key, '{'); }
  void end_object() { close('}'); }
  void begin_array(const char* key = nullptr) { open(key, '['); }
  void end_array() { close(']'); }
  void field(const char* key, const std::string& v) {
    prefix(key);
    string(v);
  }
  void field(const char* key, const char* v) { field(key, std::string(v)); }
  void field(const char* key, double v) {
    prefix(key);
    if (std::isfinite(v)) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.9g", v);
      os_ << buf;
    } else {
      os_ << "null";
    }
  }
  void field(const char* key, std::uint64_t v) {
    prefix(key);
    os_ << v;
  }
  void field(const char* key, unsigned v) { field(key, static_cast<std::uint64_t>(v)); }
  void field(const char* key, bool v) {
    prefix(key);
    os_ << (v ? "true" : "false");
  }
  void value(const std::string& v) {
    prefix(nullptr);
    string(v);
  }

 private:
  void prefix(const char* key) {
    if (!first_.empty()) {
      if (!first_.back()) os_ << ",";
      first_.back() = false;
      os_ << "\n" << std::string(2 * first_.size(), ' ');
    }
    if (key) {
      string(key);
      os_ << ": ";
    }
  }
  void open(const char* key, char c) {
    prefix(key);
    os_ << c;
    first_.push_back(true);
  }
  void close(char c) {
    bool empty = first_.back();
    first_.pop_back();
    if (!empty) os_ << "\n" << std::string(2 * first_.size(), ' ');
    os_ << c;
    if (first_.empty()) os_ << "\n";
  }
  void string(const std::string& s) {
    os_ << '"';
    for (unsigned char c : s) {
      if (c == '"' || c == '\\')
        os_ << '\\' << c;
      else if (c == '\n')
        os_ << "\\n";
      else if (c == '\t')
        os_ << "\\t";
      else if (c == '\r')
        os_ << "\\r";
      else if (c < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        os_ << buf;
      } else
        os_ << c;
    }
    os_ << '"';
  }
  std::ostream& os_;
  std::vector<bool> first_;
};

// {"items": N, "top": [{"reason": R, "count": C}, ...], "other": M, "distinct": D}
void reasons_json(Json& j, const char* key, const ReasonTally& t) {
  j.begin_object(key);
  j.field("items", t.total());
  j.begin_array("top");
  for (const auto& e : t.top(kTopReasons)) {
    j.begin_object();
    j.field("reason", e.reason);
    j.field("count", e.count);
    j.end_object();
  }
  j.end_array();
  j.field("other", t.other(kTopReasons));
  j.field("distinct", static_cast<std::uint64_t>(t.distinct()));
  j.end_object();
}

void summary_json(Json& j, const char* key, const stats::Summary& s) {
  j.begin_object(key);
  j.field("count", static_cast<std::uint64_t>(s.count));
  j.field("min", s.min);
  j.field("mean", s.mean);
  j.field("stddev", s.stddev);
  j.field("p50", s.p50);
  j.field("p90", s.p90);
  j.field("p95", s.p95);
  j.field("p99", s.p99);
  j.field("p99_9", s.p999);
  j.field("max", s.max);
  j.begin_object("jitter");
  j.field("mean", s.jitter.mean);
  j.field("stddev", s.jitter.stddev);
  j.field("beyond_mean_plus_2sd", s.jitter.beyond_2sigma);
  j.field("beyond_mean_plus_3sd", s.jitter.beyond_3sigma);
  j.field("beyond_mean_plus_4sd", s.jitter.beyond_4sigma);
  j.end_object();
  j.end_object();
}

}  // namespace

bool write_json(const std::string& path, const BenchOptions& o,
                const std::vector<std::string>& targets, const SetupSummary& setup,
                const std::vector<RepSummary>& reps, std::string& error) {
  std::ofstream out(path);
  if (!out) {
    error = "cannot write " + path;
    return false;
  }
  Json j(out);
  j.begin_object();
  j.field("label", o.label);
  j.field("command", o.command_line);
  j.field("run_id", o.run_id);
  j.begin_object("options");
  j.begin_array("targets");
  for (const auto& t : targets) j.value(t);
  j.end_array();
  j.field("replica_mode", targets.size() > 1);
  j.field("mode", to_string(o.mode));
  j.field("client_threads", to_string(o.threads));
  j.field("persistent", o.persistent);
  j.field("clients", o.clients);
  j.field("think_ms", o.think_ms);
  j.field("rate", o.rate);
  j.field("senders", o.senders);
  j.field("max_inflight", o.max_inflight);
  j.field("requests", o.requests);
  j.field("duration_s", o.duration_s);
  j.field("warmup_s", o.warmup_s);
  j.field("repeat", o.repeat);
  j.field("workload", to_string(o.workload));
  j.field("accounts_per_request", o.accounts_per_request);
  j.field("orders_per_request", o.orders_per_request);
  j.begin_array("class_mix");
  for (const auto& c : o.class_mix) {
    j.begin_object();
    j.field("children", c.children);
    j.field("weight", c.weight);
    j.end_object();
  }
  j.end_array();
  j.field("price_decimals", o.price_decimals);
  j.field("symbols", o.symbols);
  j.field("accounts", o.accounts);
  j.field("account_base", o.account_base);
  j.field("query_ratio", o.query_ratio);
  j.field("cancel_ratio", o.cancel_ratio);
  j.field("ioc_ratio", o.order_types.ioc);
  j.field("market_ratio", o.order_types.market);
  j.field("replace_ratio", o.order_types.replace);
  j.field("seed", o.seed);
  j.field("timeout_s", o.timeout_s);
  j.field("tls", o.security.tls);
  j.field("tls_resume", o.security.tls && o.security.tls_resume == "on");
  j.field("tls_max_version", o.security.tls ? o.security.tls_max_version : "");
  j.field("client_certificate", !o.security.cert_file.empty());
  j.field("principal", o.security.principal);
  j.end_object();
  j.begin_object("setup");
  j.field("ran", setup.ran);
  j.field("requests", setup.requests);
  j.field("created", setup.created);
  j.field("already_existed", setup.already_existed);
  j.field("errors", setup.errors);
  j.field("first_error", setup.first_error);
  j.field("seed_orders", setup.seed_orders);
  j.field("seconds", setup.seconds);
  j.end_object();
  j.field("percentile_method", "nearest-rank");
  j.field("latency_unit", "ms");
  j.begin_array("repetitions");
  for (const RepSummary& r : reps) {
    j.begin_object();
    j.field("rep", r.rep);
    j.field("requests", r.requests);
    j.field("warmup_requests", r.warmup_requests);
    j.field("ok", r.ok);
    j.field("rejected", r.rejected);
    j.field("error_replies", r.error_replies);
    j.field("connection_errors", r.conn_errors);
    j.field("dropped", r.dropped);
    j.field("items", r.items);
    j.field("items_rejected", r.items_rejected);
    j.field("items_error", r.items_error);
    j.field("completion_s", r.completion_s);
    j.field("throughput_rps", r.throughput_rps);
    j.field("throughput_items_ps", r.throughput_items_ps);
    summary_json(j, "latency_ms", r.latency_ms);
    if (targets.size() > 1) {
      summary_json(j, "first_reply_latency_ms", r.first_latency_ms);
      j.field("disagreements", r.disagreements);
      j.field("replica_failures", r.replica_failures);
    }
    j.field("sessions_opened", static_cast<std::uint64_t>(r.sessions_opened));
    if (o.security.tls) {
      j.field("tls_handshakes", r.tls_handshakes);
      j.field("tls_resumed", r.tls_resumed);
    }
    if (!o.class_mix.empty()) {
      j.begin_array("latency_ms_by_class");
      for (const ClassLatency& c : r.by_class) {
        j.begin_object();
        j.field("children", c.children);
        summary_json(j, "latency_ms", c.latency_ms);
        j.end_object();
      }
      j.end_array();
    }
    reasons_json(j, "rejected_by_reason", r.rejected_reasons);
    reasons_json(j, "error_replies_by_reason", r.error_reasons);
    j.begin_array("error_examples");
    for (const auto& e : r.error_examples) j.value(e);
    j.end_array();
    j.end_object();
  }
  j.end_array();
  j.begin_object("aggregate");
  j.field("repetitions", static_cast<std::uint64_t>(reps.size()));
  j.field("confidence", 0.95);
  for (const auto& a : kAggregates) {
    auto ci = aggregate(reps, a);
    std::string key = a.name;
    std::replace(key.begin(), key.end(), ' ', '_');
    j.begin_object(key.c_str());
    j.field("unit", a.unit);
    j.field("mean", ci.mean);
    j.field("stddev", ci.stddev);
    j.field("ci95_half_width", ci.half_width);
    j.field("ci95_low", ci.lower());
    j.field("ci95_high", ci.upper());
    j.end_object();
  }
  j.end_object();
  j.end_object();
  out.flush();
  if (!out) {
    error = "error writing " + path;
    return false;
  }
  return true;
}

bool CsvWriter::open(const std::string& path, std::string& error) {
  path_ = path;
  out_.open(path);
  if (!out_) {
    error = "cannot write " + path;
    return false;
  }
  out_ << "rep,index,intended_us,start_us,first_us,end_us,latency_us,first_latency_us,"
          "status,ok,items,warmup,agree\n";
  return true;
}

void CsvWriter::write(unsigned rep, const std::vector<Sample>& samples) {
  if (!out_.is_open()) return;
  auto us = [](std::int64_t ns) { return static_cast<double>(ns) / 1e3; };
  char buf[320];
  for (const Sample& s : samples) {
    int n;
    if (s.status == Status::Dropped) {  // never sent: no start, end or latency
      n = std::snprintf(buf, sizeof buf, "%u,%llu,%.1f,,,,,,%s,0,%u,%d,\n", rep,
                        static_cast<unsigned long long>(s.index), us(s.intended_ns),
                        to_string(s.status), s.items, s.warmup ? 1 : 0);
    } else {
      n = std::snprintf(buf, sizeof buf, "%u,%llu,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f,%s,%d,%u,%d,%s\n",
                        rep, static_cast<unsigned long long>(s.index), us(s.intended_ns),
                        us(s.start_ns), us(s.first_ns), us(s.end_ns), us(s.end_ns - s.intended_ns),
                        us(s.first_ns - s.intended_ns), to_string(s.status), s.served() ? 1 : 0,
                        s.items, s.warmup ? 1 : 0, s.agree < 0 ? "" : (s.agree ? "1" : "0"));
    }
    out_.write(buf, n);
  }
}

bool CsvWriter::close(std::string& error) {
  if (!out_.is_open()) return true;
  out_.close();
  if (!out_) {
    error = "error writing " + path_;
    return false;
  }
  return true;
}

}  // namespace exch::bench

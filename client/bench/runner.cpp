#include "bench/runner.hpp"

#include <algorithm>
#include <csignal>
#include <cstdio>

#include "bench/replicas.hpp"

namespace exch::bench {

namespace {
volatile std::sig_atomic_t g_interrupted = 0;
extern "C" void on_sigint(int) { g_interrupted = 1; }
}  // namespace

bool interrupted() { return g_interrupted != 0; }

void install_interrupt_handler() {
  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESETHAND;  // a second Ctrl-C kills as usual
  sigaction(SIGINT, &sa, nullptr);
}

const char* to_string(Status s) {
  switch (s) {
    case Status::Ok:
      return "ok";
    case Status::Rejected:
      return "rejected";
    case Status::ErrorReply:
      return "error_reply";
    case Status::ConnError:
      return "conn_error";
    case Status::Dropped:
      return "dropped";
  }
  return "?";
}

RunContext::RunContext(const BenchOptions& o, Targets& t, Workload& w, unsigned r)
    : options(o), targets(t), workload(w), rep(r) {
  warmup_ns = static_cast<std::int64_t>(o.warmup_s * 1e9);
}

Sample RunContext::execute(Executor& executor, const Request& request, std::uint64_t index,
                           std::int64_t intended_ns, bool warmup) {
  const std::size_t n = targets.size();
  std::vector<std::string> payloads;
  payloads.reserve(n);
  for (std::size_t t = 0; t < n; ++t) payloads.push_back(request.render(t));
  const std::vector<ChildKind> kinds = request.kinds();

  Sample s;
  s.index = index;
  s.intended_ns = intended_ns;
  s.warmup = warmup;
  s.items = static_cast<std::uint32_t>(request.items());
  counters.sent.fetch_add(1, std::memory_order_relaxed);
  s.start_ns = tb.now_ns();
  std::vector<TargetResult> results;
  executor.run(payloads, results);

  VoteOutcome v = vote(results, kinds);
  s.first_ns = v.first_ns;
  s.end_ns = v.all_ns;
  s.replica_failures = static_cast<std::uint8_t>(std::min<std::size_t>(v.failed, 255));
  for (const auto& r : results) {
    if (r.fatal) abort(r.error);
    if (!r.ok) note_error(r.error);
  }

  if (v.replied == 0) {
    s.status = Status::ConnError;
    counters.conn_errors.fetch_add(1, std::memory_order_relaxed);
  } else {
    std::vector<ReplyVerdict> verdicts(n);
    std::vector<const ReplyVerdict*> learned(n, nullptr);
    for (std::size_t t = 0; t < n; ++t) {
      if (!results[t].ok) continue;
      verdicts[t] = classify_reply(results[t].body, kinds, options.reject_words);
      learned[t] = &verdicts[t];
    }
    workload.learn(request, learned);
    const ReplyVerdict& w = verdicts[v.winner];
    s.items_rejected = static_cast<std::uint32_t>(w.rejected_items);
    s.items_error = static_cast<std::uint32_t>(w.error_items);
    if (!warmup && (w.error_items > 0 || w.rejected_items > 0)) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (w.error_items > 0)
        for (const auto& text : w.error_texts) error_reasons_.add(text);
      else
        for (const auto& text : w.rejected_texts) rejected_reasons_.add(text);
    }
    if (w.error_items > 0) {
      s.status = Status::ErrorReply;
      counters.error_replies.fetch_add(1, std::memory_order_relaxed);
      note_error("error reply: " + w.first_error);
    } else if (w.rejected_items > 0) {
      s.status = Status::Rejected;
      counters.rejected.fetch_add(1, std::memory_order_relaxed);
    } else {
      s.status = Status::Ok;
      counters.ok.fetch_add(1, std::memory_order_relaxed);
    }
    if (n > 1) {
      s.agree = v.disagree ? 0 : 1;
      if (v.disagree) counters.disagreements.fetch_add(1, std::memory_order_relaxed);
    }
  }
  counters.done.fetch_add(1, std::memory_order_relaxed);
  return s;
}

Sample RunContext::dropped(std::uint64_t index, std::int64_t intended_ns, bool warmup) {
  Sample s;
  s.index = index;
  s.intended_ns = s.start_ns = s.first_ns = s.end_ns = intended_ns;
  s.status = Status::Dropped;
  s.warmup = warmup;
  counters.dropped.fetch_add(1, std::memory_order_relaxed);
  return s;
}

void RunContext::add_samples(std::vector<Sample>&& samples) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (samples_.empty()) {
    samples_ = std::move(samples);
  } else {
    samples_.insert(samples_.end(), samples.begin(), samples.end());
  }
}

std::vector<Sample> RunContext::take_samples() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<Sample> out = std::move(samples_);
  samples_.clear();
  std::sort(out.begin(), out.end(),
            [](const Sample& a, const Sample& b) { return a.index < b.index; });
  return out;
}

void RunContext::note_error(const std::string& message) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (errors_.size() >= 5) return;
  if (std::find(errors_.begin(), errors_.end(), message) == errors_.end())
    errors_.push_back(message);
}

std::vector<std::string> RunContext::error_examples() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return errors_;
}

ReasonTally RunContext::rejected_reasons() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return rejected_reasons_;
}

ReasonTally RunContext::error_reasons() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return error_reasons_;
}

void RunContext::abort(const std::string& why) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!aborted_.exchange(true)) abort_reason_ = why;
}

std::string RunContext::abort_reason() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return abort_reason_;
}

Progress::Progress(RunContext& ctx, bool enabled) : ctx_(ctx) {
  if (!enabled) return;
  thread_ = std::thread([this] {
    std::uint64_t last_done = 0;
    auto last = Clock::now();
    std::unique_lock<std::mutex> lock(mutex_);
    for (int tick = 1;; ++tick) {
      if (cv_.wait_until(lock, ctx_.tb.origin + std::chrono::seconds(tick),
                         [this] { return stop_; }))
        return;
      auto now = Clock::now();
      const Counters& c = ctx_.counters;
      std::uint64_t done = c.done.load();
      double dt = std::chrono::duration<double>(now - last).count();
      double rate = dt > 0 ? static_cast<double>(done - last_done) / dt : 0;
      last_done = done;
      last = now;
      std::uint64_t errors = c.error_replies.load() + c.conn_errors.load();
      std::fprintf(stderr,
                   "[rep %u %4ds%s] sent %llu done %llu errors %llu (conn %llu) "
                   "rejected %llu dropped %llu  %.1f req/s\n",
                   ctx_.rep, tick, ctx_.tb.now_ns() < ctx_.warmup_ns ? " warmup" : "",
                   static_cast<unsigned long long>(c.sent.load()),
                   static_cast<unsigned long long>(done), static_cast<unsigned long long>(errors),
                   static_cast<unsigned long long>(c.conn_errors.load()),
                   static_cast<unsigned long long>(c.rejected.load()),
                   static_cast<unsigned long long>(c.dropped.load()), rate);
    }
  });
}

void Progress::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

Progress::~Progress() { stop(); }

}  // namespace exch::bench

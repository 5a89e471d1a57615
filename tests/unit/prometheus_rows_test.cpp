// /metrics from rows (issue 39): a family that reads no series is left out whole, histograms
// render cumulative buckets, and Metrics::prometheus_text keeps what always applies and drops
// what does not (-1) for this model, role or configuration.
#include <chrono>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "observability/metrics.hpp"
#include "observability/prometheus.hpp"

namespace {

namespace p = app::prometheus;

struct Source {
  long absent = -1;
  long count = 5;
  long ms = 1500;
};

bool has(const std::string& text, const std::string& line) {
  return text.find(line) != std::string::npos;
}

}  // namespace

TEST_CASE("a row that reads no series is left out, HELP and TYPE too", "[unit]") {
  const std::vector<p::Row<Source>> rows = {
      {"a_total", "counter", "Absent.", [](const Source& s) { return p::single(s.absent); }},
      {"b_total", "counter", "Counted.", [](const Source& s) { return p::single(s.count); }},
      {"c_seconds", "gauge", "From ms.", [](const Source& s) { return p::seconds_from_ms(s.ms); }},
  };
  CHECK(p::render(rows, Source{}) ==
        "# HELP b_total Counted.\n# TYPE b_total counter\nb_total 5\n"
        "# HELP c_seconds From ms.\n# TYPE c_seconds gauge\nc_seconds 1.5\n");
}

TEST_CASE("histogram series are cumulative buckets, then _sum and _count", "[unit]") {
  p::Histogram h({1, 2});
  for (double v : {0.5, 1.5, 3.0}) h.observe(v);
  std::string out;
  p::family(out, "h", "histogram", "H.", h.series("root=\"create\""));
  CHECK(out ==
        "# HELP h H.\n# TYPE h histogram\n"
        "h_bucket{root=\"create\",le=\"1\"} 1\nh_bucket{root=\"create\",le=\"2\"} 2\n"
        "h_bucket{root=\"create\",le=\"+Inf\"} 3\n"
        "h_sum{root=\"create\"} 5\nh_count{root=\"create\"} 3\n");
}

TEST_CASE("/metrics keeps what always applies and leaves out what does not", "[unit]") {
  app::Metrics m;
  m.request_answered(app::Metrics::Root::Create, app::Outcome::Durable, std::chrono::seconds(0));
  std::string text = m.prometheus_text();
  CHECK(has(text, "\nexchange_requests_total{root=\"create\",outcome=\"ok\"} 1\n"));
  CHECK(has(text, "\nexchange_requests_total{root=\"invalid\",outcome=\"failed\"} 0\n"));
  CHECK(has(text, "\nexchange_commits_failed_total 0\n"));
  CHECK_FALSE(has(text, "exchange_threads"));  // no model's gauges set
  CHECK_FALSE(has(text, "exchange_role"));
  CHECK_FALSE(has(text, "exchange_auth_"));  // no --principals

  m.set_state([] {
    app::Metrics::StateGauges st;
    st.role = 0;
    st.journal_seq = 10;
    st.projected_seq = 4;
    st.standby_lag_ms = 250;
    return st;
  });
  text = m.prometheus_text();
  CHECK(has(text, "\nexchange_role{role=\"active\"} 0\nexchange_role{role=\"standby\"} 1\n"));
  CHECK(has(text, "\nexchange_projection_lag_entries 6\n"));
  CHECK(has(text, "\nexchange_standby_lag_seconds 0.25\n"));
  CHECK_FALSE(has(text, "exchange_orders_resting"));
}

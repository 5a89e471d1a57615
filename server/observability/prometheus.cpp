#include "observability/prometheus.hpp"

#include <cmath>
#include <cstdio>

namespace app::prometheus {

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)), buckets_(bounds_.size() + 1) {}

void Histogram::observe(double value) {
  std::size_t i = 0;
  while (i < bounds_.size() && value > bounds_[i]) ++i;
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  double sum = sum_.load(std::memory_order_relaxed);
  while (!sum_.compare_exchange_weak(sum, sum + value, std::memory_order_relaxed)) {
  }
}

SeriesList Histogram::series(const std::string& labels) const {
  const std::string sep = labels.empty() ? "" : labels + ",";
  SeriesList out;
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i <= bounds_.size(); ++i) {
    cumulative += buckets_[i].load(std::memory_order_relaxed);
    std::string le = i < bounds_.size() ? number(bounds_[i]) : "+Inf";
    out.push_back({"_bucket", sep + "le=\"" + le + "\"", static_cast<double>(cumulative)});
  }
  out.push_back({"_sum", labels, sum_.load(std::memory_order_relaxed)});
  out.push_back({"_count", labels, static_cast<double>(cumulative)});
  return out;
}

std::vector<double> exponential_buckets(double start, double factor, int count) {
  std::vector<double> out;
  for (int i = 0; i < count; ++i, start *= factor) out.push_back(start);
  return out;
}

namespace {

// "# HELP name help" and "# TYPE name type".
void header(std::string& out, const std::string& name, const std::string& type,
            const std::string& help) {
  out += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

// "name{labels} value".
void sample(std::string& out, const std::string& name, const std::string& labels, double value) {
  out += name;
  if (!labels.empty()) out += "{" + labels + "}";
  out += " " + number(value) + "\n";
}

}  // namespace

void family(std::string& out, const std::string& name, const std::string& type,
            const std::string& help, const SeriesList& series) {
  if (series.empty()) return;
  header(out, name, type, help);
  for (const Series& s : series) sample(out, name + s.suffix, s.labels, s.value);
}

SeriesList single(long value) {
  if (value < 0) return {};
  return {{"", "", static_cast<double>(value)}};
}

SeriesList seconds_from_ms(long ms) {
  if (ms < 0) return {};
  return {{"", "", ms / 1000.0}};
}

std::string number(double value) {
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  if (std::isnan(value)) return "NaN";
  if (value == std::floor(value) && std::fabs(value) < 1e15)
    return std::to_string(static_cast<long long>(value));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", value);
  return buf;
}

}  // namespace app::prometheus

#include "util/settings.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <stdexcept>

namespace util {

namespace {

constexpr long long kLongMin = std::numeric_limits<long long>::min();

// Whole decimal integers only: no sign on an unsigned field, no spaces, no "1e3", no "0x".
std::optional<long long> parse_integer(const std::string& text, bool negative_allowed) {
  std::size_t digits = text.size();
  std::size_t start = 0;
  if (negative_allowed && !text.empty() && text[0] == '-') start = 1;
  if (start == digits) return std::nullopt;
  for (std::size_t i = start; i < digits; ++i)
    if (text[i] < '0' || text[i] > '9') return std::nullopt;
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno == ERANGE || end != text.c_str() + text.size()) return std::nullopt;
  return v;
}

bool parse_switch(const std::string& text, bool& out) {
  std::string t = text;
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return std::tolower(c); });
  const bool yes = t == "true" || t == "1" || t == "yes" || t == "on";
  const bool no = t == "false" || t == "0" || t == "no" || t == "off";
  out = yes;
  return yes || no;
}

}  // namespace

Setting& Setting::help(std::string text) {
  help_ = std::move(text);
  return *this;
}

Setting& Setting::unit(std::string unit) {
  unit_ = std::move(unit);
  return *this;
}

Setting& Setting::at_least(long long min) {
  min_ = std::max(min_, min);
  return *this;
}

Setting& Setting::at_most(long long max) {
  max_ = std::min(max_, max);
  return *this;
}

Setting& Setting::no_default() {
  shows_default_ = false;
  return *this;
}

Setting& Setting::hidden() {
  hidden_ = true;
  return *this;
}

std::string Setting::range_text() const {
  if (kind_ != Kind::Integer) return "";
  const std::string u = unit_.empty() ? "" : " " + unit_;
  if (max_ < type_max_)
    return "between " + std::to_string(min_) + " and " + std::to_string(max_) + u;
  if (min_ > kLongMin) return "at least " + std::to_string(min_) + u;
  return "";
}

bool Setting::narrowed() const { return min_ > type_min_ || max_ < type_max_; }

std::optional<std::string> Setting::set(const std::string& text) {
  if (kind_ == Kind::Integer) return set_integer(text);
  if (kind_ == Kind::Switch) {
    bool on = false;
    if (!parse_switch(text, on)) return "must be true or false, not '" + text + "'";
    set_text_(on ? "true" : "false");
    return std::nullopt;
  }
  set_text_(text);
  return std::nullopt;
}

std::optional<std::string> Setting::set_integer(const std::string& text) {
  const std::string range = range_text();
  const std::string wanted = "must be an integer" + (range.empty() ? "" : " " + range);
  auto v = parse_integer(text, min_ < 0);
  if (!v || *v < min_ || *v > max_) return wanted + ", not '" + text + "'";
  set_number_(*v);
  return std::nullopt;
}

Setting& Settings::add(const std::string& name, const std::string& group, std::string* field) {
  Setting& s = push(name, group, Setting::Kind::Text, 0, 0);
  s.get_ = [field] { return *field; };
  s.set_text_ = [field](const std::string& v) { *field = v; };
  return s;
}

Setting& Settings::add(const std::string& name, const std::string& group, bool* field) {
  Setting& s = push(name, group, Setting::Kind::Switch, 0, 1);
  s.get_ = [field] { return *field ? "true" : "false"; };
  s.set_text_ = [field](const std::string& v) { *field = v == "true"; };
  return s;
}

Setting* Settings::find(const std::string& name) {
  for (auto& s : rows_)
    if (s.name() == name) return &s;
  return nullptr;
}

std::vector<std::string> Settings::groups() const {
  std::vector<std::string> out;
  for (const auto& s : rows_)
    if (std::find(out.begin(), out.end(), s.group()) == out.end()) out.push_back(s.group());
  return out;
}

Setting& Settings::push(const std::string& name, const std::string& group, Setting::Kind kind,
                        long long min, long long max) {
  if (find(name) != nullptr) throw std::logic_error("setting --" + name + " declared twice");
  rows_.push_back(Setting(name, group, kind, min, max));
  return rows_.back();
}

}  // namespace util

#pragma once
// Settings declared once: each is a row (name, group, help, unit, range) bound to the field of
// the options struct that holds its value, so the struct's initializer is the one default. The
// layer that owns a struct declares its rows (e.g. net/settings.hpp); cli/settings_parser.hpp
// turns every row into a flag, a --config FILE key and a range check, and --help lists them.
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace util {

class Setting {
 public:
  enum class Kind { Integer, Text, Switch };

  // Builders, for the declaring layer.
  Setting& help(std::string text);
  Setting& unit(std::string unit);  // "ms", "bytes": shown in --help and in range errors
  Setting& at_least(long long min);
  Setting& at_most(long long max);
  Setting& between(long long min, long long max) { return at_least(min).at_most(max); }
  Setting& no_default();  // the initial value means "not given" (--db, --admin-port)
  Setting& hidden();      // accepted, not in --help (test aids)

  const std::string& name() const { return name_; }
  const std::string& group() const { return group_; }
  const std::string& help_text() const { return help_; }
  const std::string& unit_text() const { return unit_; }
  Kind kind() const { return kind_; }
  bool shows_default() const { return shows_default_; }
  bool is_hidden() const { return hidden_; }
  // The field's value as text: before parsing, the default --help shows.
  std::string value_text() const { return get_(); }
  // "between 1 and 65535 ms", "at least 1 ms", or "" for text and switches.
  std::string range_text() const;
  // Whether the declaration narrowed the field type's range (--help then shows it).
  bool narrowed() const;

  // Parses `text` into the field. Returns why it cannot ("must be an integer between 1 and
  // 100 ms, not 'x'"), without the setting's name, or nullopt once assigned.
  std::optional<std::string> set(const std::string& text);

 private:
  friend class Settings;
  Setting(std::string name, std::string group, Kind kind, long long min, long long max)
      : name_(std::move(name)),
        group_(std::move(group)),
        kind_(kind),
        min_(min),
        max_(max),
        type_min_(min),
        type_max_(max) {}
  std::optional<std::string> set_integer(const std::string& text);

  std::string name_, group_, help_, unit_;
  Kind kind_;
  long long min_, max_;            // allowed
  long long type_min_, type_max_;  // what the field's type holds
  bool shows_default_ = true;
  bool hidden_ = false;
  std::function<std::string()> get_;
  std::function<void(const std::string&)> set_text_;  // Text, Switch ("true"/"false")
  std::function<void(long long)> set_number_;         // Integer
};

// Every setting of a binary, in declaration order; groups appear in --help in the order
// their first setting was declared. A name is declared once (std::logic_error otherwise).
class Settings {
 public:
  template <typename T,
            std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  Setting& add(const std::string& name, const std::string& group, T* field) {
    using Limits = std::numeric_limits<T>;
    const long long max =
        Limits::max() > static_cast<unsigned long long>(std::numeric_limits<long long>::max())
            ? std::numeric_limits<long long>::max()
            : static_cast<long long>(Limits::max());
    Setting& s =
        push(name, group, Setting::Kind::Integer, static_cast<long long>(Limits::min()), max);
    s.get_ = [field] { return std::to_string(*field); };
    s.set_number_ = [field](long long v) { *field = static_cast<T>(v); };
    return s;
  }
  template <typename Rep, typename Period>
  Setting& add(const std::string& name, const std::string& group,
               std::chrono::duration<Rep, Period>* field) {
    Setting& s =
        push(name, group, Setting::Kind::Integer, 0, std::numeric_limits<std::int32_t>::max());
    s.get_ = [field] { return std::to_string(field->count()); };
    s.set_number_ = [field](long long v) { *field = std::chrono::duration<Rep, Period>(v); };
    return s;
  }
  Setting& add(const std::string& name, const std::string& group, std::string* field);
  Setting& add(const std::string& name, const std::string& group, bool* field);  // a switch

  const std::deque<Setting>& rows() const { return rows_; }
  std::deque<Setting>& rows() { return rows_; }
  Setting* find(const std::string& name);
  std::vector<std::string> groups() const;

 private:
  Setting& push(const std::string& name, const std::string& group, Setting::Kind kind,
                long long min, long long max);
  std::deque<Setting> rows_;  // a deque: a Setting& stays valid while more are added
};

}  // namespace util

#include "cli/settings_parser.hpp"

#include <algorithm>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include <boost/program_options.hpp>

#include "util/log.hpp"

namespace po = boost::program_options;

namespace cli {

namespace {

const char* const kConfigHelp =
    "FILE of settings: one `name = value` a line, the name of a flag without its dashes "
    "(`read-timeout-ms = 5000`, `standby = true`), `#` starts a comment; a flag on the command "
    "line wins over the file; an unknown name or a bad value: exit 2, naming its line";

std::string described(const util::Setting& s) {
  std::string suffix = s.narrowed() ? s.range_text() : s.unit_text();
  return suffix.empty() ? s.help_text() : s.help_text() + " [" + suffix + "]";
}

// One program_options entry a setting: every value is read as text and parsed by the
// setting itself, so errors and ranges are the same from the command line and the file.
void add_option(po::options_description& d, const util::Setting& s, const std::string& help) {
  auto* v = po::value<std::string>();
  if (s.kind() == util::Setting::Kind::Switch)
    v->zero_tokens()->implicit_value("true");
  else if (s.shows_default())
    v->default_value(s.value_text());
  d.add_options()(s.name().c_str(), v, help.c_str());
}

struct Descriptions {
  po::options_description visible, all;
};

void describe(const util::Settings& settings, Descriptions& out) {
  out.visible.add_options()("help,h", "show this help and exit")("config", po::value<std::string>(),
                                                                 kConfigHelp);
  for (const auto& group : settings.groups()) {
    po::options_description g(group);
    for (const auto& s : settings.rows())
      if (s.group() == group && !s.is_hidden()) add_option(g, s, described(s));
    if (!g.options().empty()) out.visible.add(g);
  }
  po::options_description hidden;
  for (const auto& s : settings.rows())
    if (s.is_hidden()) add_option(hidden, s, s.help_text());
  out.all.add(out.visible).add(hidden);
}

std::string trim(const std::string& s) {
  const char* space = " \t\r\n\f\v";
  const auto first = s.find_first_not_of(space);
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(space) - first + 1);
}

// The line without a comment: `#` at its start, or after a space or tab.
std::string without_comment(const std::string& line) {
  for (std::size_t i = 0; i < line.size(); ++i)
    if (line[i] == '#' && (i == 0 || line[i - 1] == ' ' || line[i - 1] == '\t'))
      return line.substr(0, i);
  return line;
}

}  // namespace

std::string settings_help(const util::Settings& settings, const std::string& caption) {
  Descriptions d{po::options_description(caption), po::options_description()};
  describe(settings, d);
  std::ostringstream out;
  out << d.visible;
  return out.str();
}

std::optional<std::string> apply_settings_file(const std::string& path, util::Settings& settings,
                                               const std::vector<std::string>& keep) {
  std::ifstream in(path);
  if (!in) return "cannot read --config " + path;
  std::set<std::string> seen;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const std::string where = path + ":" + std::to_string(number) + ": ";
    const std::string text = trim(without_comment(line));
    if (text.empty()) continue;
    const auto eq = text.find('=');
    if (eq == std::string::npos) return where + "expected `name = value`, got '" + text + "'";
    const std::string name = trim(text.substr(0, eq));
    const std::string value = trim(text.substr(eq + 1));
    if (name.rfind("-", 0) == 0)
      return where + "write the name without its dashes: '" +
             name.substr(name.find_first_not_of('-')) + "'";
    util::Setting* s = settings.find(name);
    if (s == nullptr) return where + "unknown setting '" + name + "'";
    if (!seen.insert(name).second) return where + "'" + name + "' is set twice in this file";
    if (value.empty()) return where + "'" + name + "' has no value";
    if (std::find(keep.begin(), keep.end(), name) != keep.end()) continue;
    if (auto problem = s->set(value)) return where + name + " " + *problem;
  }
  if (in.bad()) return "cannot read --config " + path;
  return std::nullopt;
}

std::optional<int> parse_settings(int argc, char** argv, util::Settings& settings,
                                  const std::string& caption) {
  Descriptions d{po::options_description(caption), po::options_description()};
  describe(settings, d);
  po::variables_map vm;
  try {
    po::store(po::parse_command_line(argc, argv, d.all), vm);
  } catch (const std::exception& e) {
    EXCHANGE_LOG(error) << e.what() << " (try --help)";
    return 2;
  }
  if (vm.count("help")) {
    std::cout << d.visible << "\n";
    return 0;
  }
  std::vector<std::string> given;  // on the command line: they win over the file
  for (const auto& s : settings.rows())
    if (vm.count(s.name()) && !vm[s.name()].defaulted()) given.push_back(s.name());
  if (vm.count("config")) {
    if (auto problem = apply_settings_file(vm["config"].as<std::string>(), settings, given)) {
      EXCHANGE_LOG(error) << *problem;
      return 2;
    }
  }
  for (const auto& name : given) {
    util::Setting& s = *settings.find(name);
    if (auto problem = s.set(vm[name].as<std::string>())) {
      EXCHANGE_LOG(error) << "--" << name << " " << *problem;
      return 2;
    }
  }
  return std::nullopt;
}

}  // namespace cli

#pragma once
// A binary's settings (util/settings.hpp) from its command line and the --config FILE it names:
// one `name = value` a line (the flag's name without its dashes), `#` comments, flags on the
// command line win over the file. Any problem is one line naming the setting (and the file's
// line) and what it allows.
#include <optional>
#include <string>

#include "util/settings.hpp"

namespace cli {

// Parses into `settings`. Returns the exit status when the process should end now: 0 after
// --help (printed to stdout), 2 after logging the problem.
std::optional<int> parse_settings(int argc, char** argv, util::Settings& settings,
                                  const std::string& caption);

// The --help text: `caption`, --help and --config, then each group's settings with their
// defaults, units and ranges (hidden ones left out).
std::string settings_help(const util::Settings& settings, const std::string& caption);

// Applies the settings file at `path` to `settings`, skipping names in `keep` (given on the
// command line). Returns the problem ("FILE:LINE: ..."), or nullopt.
std::optional<std::string> apply_settings_file(const std::string& path, util::Settings& settings,
                                               const std::vector<std::string>& keep = {});

}  // namespace cli

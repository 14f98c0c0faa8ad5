// Command-line options of the prize draw: `--name value` pairs, checked against the known names,
// with errors that name the option, the value and the rule.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace prize_draw {

class Options {
 public:
  // `flags` are the options that take no value (present or not). Throws std::invalid_argument
  // for an unknown option or a missing value, naming it.
  Options(const std::vector<std::string>& args, const std::vector<std::string>& known,
          const std::vector<std::string>& flags = {});

  bool has(const std::string& name) const { return values_.count(name) != 0; }
  std::string text(const std::string& name, const std::string& fallback) const;
  // Throws std::invalid_argument unless the value is an integer in [min, max].
  std::int64_t integer(const std::string& name, std::int64_t fallback, std::int64_t min, std::int64_t max) const;

 private:
  std::map<std::string, std::string> values_;
};

}  // namespace prize_draw

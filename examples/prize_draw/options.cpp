#include "options.hpp"

#include <algorithm>
#include <charconv>
#include <stdexcept>

namespace prize_draw {

Options::Options(const std::vector<std::string>& args, const std::vector<std::string>& known,
                 const std::vector<std::string>& flags) {
  const auto listed = [](const std::vector<std::string>& names, const std::string& name) {
    return std::find(names.begin(), names.end(), name) != names.end();
  };
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& name = args[i];
    if (listed(flags, name)) {
      values_[name] = "";
    } else if (!listed(known, name)) {
      throw std::invalid_argument("unknown option \"" + name + "\" (try --help)");
    } else if (i + 1 == args.size()) {
      throw std::invalid_argument("option " + name + " needs a value");
    } else {
      values_[name] = args[++i];
    }
  }
}

std::string Options::text(const std::string& name, const std::string& fallback) const {
  const auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second;
}

std::int64_t Options::integer(const std::string& name, std::int64_t fallback, std::int64_t min,
                              std::int64_t max) const {
  const auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  const std::string& text = it->second;
  std::int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < min || value > max) {
    throw std::invalid_argument(name + ": expected an integer in [" + std::to_string(min) + ", " + std::to_string(max) +
                                "], got \"" + text + "\"");
  }
  return value;
}

}  // namespace prize_draw

#include <string>
#include <utility>

#include "dlock/error.hpp"
#include "dlock/handoff.hpp"

namespace dlock {

void HandoffOptions::check() const {
  for (const auto& [name, value] : {std::pair{"handoff.max_time", max_time}, std::pair{"handoff.linger", linger}}) {
    if (value < std::chrono::milliseconds::zero()) {
      throw Error(make_error_code(errc::invalid_argument),
                  std::string(name) + " must not be negative, got " + std::to_string(value.count()) + " ms");
    }
  }
}

}  // namespace dlock

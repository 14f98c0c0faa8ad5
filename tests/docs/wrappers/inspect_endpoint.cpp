// docs/OPERATIONS.md's admin endpoint on dlock::inspect(). The run holds the lock with a Mutex and
// checks that lock_status() reports that holder: one contender, a dlock one, holding.
#include <dlock/dlock.hpp>

#include <cstdio>
#include <mutex>

extern "C" const char* dlock_snippet_connect() noexcept;

// @snippet

int main() {
  dlock::Session session({.connect = dlock_snippet_connect()});
  dlock::Mutex order(session, "/locks/orders/42");
  std::scoped_lock guard(order);
  const nlohmann::json status = lock_status(session, "/locks/orders/42");
  std::printf("%s\n", status.dump().c_str());
  const auto& queue = status.at("queue");
  const bool ok = queue.size() == 1 && queue[0].at("client") == "dlock" && queue[0].at("holds") == true &&
                  queue[0].at("token") == order.fencing_token();
  return ok ? 0 : 1;
}

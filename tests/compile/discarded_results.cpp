// Compile test (see CMakeLists.txt here and marked_lines.sh): every call on a line starting
// with DISCARDED throws away a result that must not be ignored (a try_* that may have failed, a
// guard or handle that would be released at once), so each such line must draw an "ignoring
// return value" diagnostic, an error under -Werror. Built with DLOCK_DISCARD_CONTROL, DISCARDED
// becomes a cast to void and the file must compile cleanly, which shows that the errors come
// from the discarded results and from nothing else. Nothing here runs.
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "dlock/lock_handle.hpp"
#include "dlock/mutex.hpp"
#include "dlock/scope.hpp"
#include "dlock/session.hpp"
#include "dlock/shared_mutex.hpp"

#ifdef DLOCK_DISCARD_CONTROL
#define DISCARDED (void)
#else
#define DISCARDED
#endif

using namespace std::chrono_literals;

void dlock_discarded_results_compile_test(dlock::Session& session, dlock::Mutex& mutex, dlock::SharedMutex& shared,
                                          const dlock::LockService& locks) {
  dlock::CompletionHooks tx_hooks;
  struct {
    dlock::CompletionHooks* hooks;
    void on_complete(std::function<void()> hook) { hooks->add(std::move(hook)); }
  } tx{&tx_hooks};
  const auto when = std::chrono::system_clock::now() + 1s;
  const std::vector<std::string> keys = {"x"};

  DISCARDED mutex.try_lock();
  DISCARDED mutex.try_lock_for(1s);
  DISCARDED mutex.try_lock_until(when);

  DISCARDED shared.try_lock();
  DISCARDED shared.try_lock_for(1s);
  DISCARDED shared.try_lock_until(when);
  DISCARDED shared.try_lock_shared();
  DISCARDED shared.try_lock_shared_for(1s);
  DISCARDED shared.try_lock_shared_until(when);

  DISCARDED dlock::LockHandle::acquire(session, "/locks/a");
  DISCARDED dlock::LockHandle::try_acquire_for(session, "/locks/a", dlock::LockMode::Exclusive, 1s);

  DISCARDED locks.lock(dlock::LockMode::Exclusive, "ns", 1);
  DISCARDED locks.lock_each(dlock::LockMode::Exclusive, "ns", 1, 2);
  DISCARDED locks.lock_key(dlock::LockMode::Exclusive, "ns", "x");
  DISCARDED locks.lock_keys(dlock::LockMode::Exclusive, "ns", keys);

  DISCARDED locks.bound_to(tx).lock(dlock::LockMode::Exclusive, "ns", 1);
  DISCARDED locks.bound_to(tx).lock_each(dlock::LockMode::Exclusive, "ns", 1, 2);
  DISCARDED locks.bound_to(tx).lock_key(dlock::LockMode::Exclusive, "ns", "x");
  DISCARDED locks.bound_to(tx).lock_keys(dlock::LockMode::Exclusive, "ns", keys);

  DISCARDED session.subscribe([](dlock::SessionState) {});
}

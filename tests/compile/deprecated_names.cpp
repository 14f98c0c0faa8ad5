// Compile test (see CMakeLists.txt here and marked_lines.sh): each line starting with DEPRECATED
// uses a name of 0.6 that 0.7 keeps for one release as a deprecated alias (CHANGELOG.md), so each
// must draw an "is deprecated" diagnostic, an error under -Werror, telling the user the new name.
// Built with -Wno-deprecated-declarations the file must compile cleanly: the aliases still work.
// Nothing here runs.
#include <boost/asio/use_future.hpp>
#include <chrono>
#include <future>

#include "dlock/async.hpp"
#include "dlock/async_recipes.hpp"
#include "dlock/batch.hpp"
#include "dlock/leader_latch.hpp"
#include "dlock/lock_handle.hpp"
#include "dlock/scope.hpp"

#define DEPRECATED

using namespace std::chrono_literals;
using Handle = dlock::LockHandle;
using Mode = dlock::LockMode;

void dlock_deprecated_names_compile_test(dlock::Session& session, dlock::LeaderLatch& latch,
                                         dlock::BatchLock<int, int>& batch, const dlock::LockService& locks) {
  DEPRECATED auto a = dlock::LockHandle::try_acquire_for(session, "/locks/a", 1s);
  DEPRECATED auto b = dlock::LockHandle::try_acquire_for(session, "/locks/a", 1s, dlock::LockMode::Read);
  DEPRECATED auto c = Handle::async_try_acquire_for(session, "/locks/a", 1s, Mode::Read, boost::asio::use_future);
  DEPRECATED auto d = latch.await_leadership();
  DEPRECATED auto e = latch.await_leadership_for(1s);
  DEPRECATED auto f = latch.async_await_leadership(boost::asio::use_future);
  DEPRECATED auto g = batch.submit(1, 1s);
  DEPRECATED dlock::ScopedLock h = locks.lock(dlock::LockMode::Exclusive, "ns", 1);
  DEPRECATED dlock::ScopedLocks i = locks.lock_each(dlock::LockMode::Exclusive, "ns", 1, 2);
  (void)a, (void)b, (void)c, (void)d, (void)e, (void)f, (void)g, (void)h, (void)i;
}

// Client::guarded_write (a multi of check + setData or create, the periodic job's record writes)
// on a handle whose session has expired. The C client's zoo_amulti, unlike its single-request
// calls, goes on after a request refuses the handle's state, and then frees a path it does not
// own: the guard's path, the caller's string (ZooKeeper 3.8's C client). So dlock must not hand
// it such a handle.
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "raw_zk.hpp"
#include "src/session/client.hpp"
#include "src/session/pending.hpp"
#include "src/session/session_access.hpp"
#include "src/session/test_hooks.hpp"
#include "test_env.hpp"

namespace dlock::testing {
namespace {

TEST(GuardedWrite, OnAnExpiredHandleIsRefusedWithoutFreeingTheCallersPaths) {
  // The expired handle stays installed for 2 s after the session is Lost: the write below
  // reaches it (on this machine, the C client's own expiry event made the state Lost).
  ScopedHook slow(detail::test_hooks::slow_handle_swap_ms, 2000);
  Session session(session_options());
  const auto& client = detail::SessionAccess::client(session);
  const std::int64_t expired = session.id();
  ASSERT_TRUE(expire_until_lost(session));
  // Longer than a short string's inline buffer: on the heap, where a stray free shows.
  const std::string guard = test_root() + "/a-guard-long-enough-to-live-on-the-heap";
  const std::string path = test_root() + "/record";
  for (const std::optional<int> version : {std::optional<int>(), std::optional<int>(0)}) {
    detail::Pending<detail::GuardedWriteResult> write;
    client->guarded_write(guard, path, "x", version, write.callback());
    const auto result = write.get();
    // A thread stalled past the 2 s would have written through the renewed session instead.
    if (session.id() != expired) GTEST_SKIP() << "the handle was replaced before the write (a stall of 2 s)";
    EXPECT_TRUE(result.rc == ZSESSIONEXPIRED || result.rc == ZCLOSING) << zerror(result.rc);
  }
}

}  // namespace
}  // namespace dlock::testing

// docs/TESTING.md's partition and session-expiry example, as the body of a test. It starts its own
// partitionable ensemble (about 10 s here, the partition included) and needs no other server;
// EXPECT_TRUE stands in for GoogleTest's, so that the block reads as it would in a test, and a
// failed check fails the run.
#include <dlock/dlock.hpp>
#include <dlock/testing/ensemble.hpp>
#include <dlock/testing/eventually.hpp>
#include <dlock/testing/expire_session.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#define EXPECT_TRUE(condition)                                        \
  do {                                                                \
    if (!(condition)) {                                               \
      std::fprintf(stderr, "%d: failed: %s\n", __LINE__, #condition); \
      std::exit(1);                                                   \
    }                                                                 \
  } while (false)

int main() {
  using namespace std::chrono_literals;
  // @snippet
  std::puts("the majority served, the old leader rejoined, the expired session's hold was lost");
}

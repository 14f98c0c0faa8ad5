// A separate process for the multi-process tests.
//   dlock_test_worker count <connect> <path> <counter-file> <threads> <cycles> lock|nolock
//       increments the file counter; prints "DONE <increments>"
//   dlock_test_worker hold <connect> <path> <session-timeout-ms>
//       takes the lock, prints "HELD <token> <node>", then sleeps until killed
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "counter_worker.hpp"
#include "dlock/dlock.hpp"

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  try {
    if (mode == "count" && argc == 2 + dlock::testing::kCounterRunArgs) {
      const auto run = dlock::testing::counter_run_from_args(argv + 2);
      std::printf("DONE %lld\n", static_cast<long long>(dlock::testing::run_counter_worker(run)));
      return 0;
    }
    if (mode == "hold" && argc == 5) {
      dlock::Session session({.connect = argv[2], .session_timeout = std::chrono::milliseconds(std::atoi(argv[4]))});
      dlock::Mutex mutex(session, argv[3]);
      mutex.lock();
      std::printf("HELD %lld %s\n", static_cast<long long>(mutex.fencing_token()), mutex.participants().at(0).c_str());
      std::fflush(stdout);
      for (;;) pause();
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dlock_test_worker: %s\n", e.what());
    return 1;
  }
  std::fprintf(stderr, "usage: dlock_test_worker count|hold ... (see lock_worker.cpp)\n");
  return 2;
}

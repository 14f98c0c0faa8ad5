// hello_lock: one process at a time works under a ZooKeeper lock. Run it in two terminals: the
// second waits until the first releases, or gives up after 10 s.
//
//   hello_lock [connect string]     (default 127.0.0.1:2181: bash scripts/zookeeper.sh start)
#include <dlock/dlock.hpp>

#include <chrono>
#include <cstdio>
#include <thread>

#include <unistd.h>  // getpid

int main(int argc, char** argv) {
  using namespace std::chrono_literals;
  const int me = static_cast<int>(getpid());
  // A line at a time even into a pipe or a file, so that it interleaves with dlock's messages on
  // stderr in the order they happened.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  try {
    // One Session per process, made in main(): it throws dlock::ConnectError if no server answers.
    dlock::Session session({.connect = argc > 1 ? argv[1] : "127.0.0.1:2181"});
    dlock::Mutex lock(session, "/locks/hello");

    std::printf("[%d] waiting for /locks/hello (at most 10 s)\n", me);
    if (!lock.try_lock_for(10s)) {
      std::printf("[%d] gave up: another process held the lock for 10 s\n", me);
      return 1;
    }
    // Larger than every earlier holder's token: a resource that remembers the last token it saw
    // can refuse a holder that lost the lock without knowing it (docs/FENCING.md).
    std::printf("[%d] got the lock, fencing token %lld\n", me, static_cast<long long>(lock.fencing_token()));

    for (int step = 1; step <= 5; ++step) {
      // still_held() turns false when the lock can no longer be trusted: the connection dropped or
      // the session expired. lock.stop_token() says the same to a std::stop_callback.
      if (!lock.still_held()) {
        std::printf("[%d] lost the lock: stopping before the next step\n", me);
        lock.unlock();
        return 2;
      }
      std::printf("[%d] working (%d/5)\n", me, step);
      std::this_thread::sleep_for(1s);
    }
    lock.unlock();
    std::printf("[%d] released the lock\n", me);
    return 0;
  } catch (const dlock::Error& e) {  // ConnectError, LockLost, ...: the message says what and why
    std::fprintf(stderr, "[%d] %s\n", me, e.what());
    return 1;
  }
}

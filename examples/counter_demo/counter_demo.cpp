// dlock demo: several processes, each running several threads, increment a counter kept in a
// plain file, once under a dlock::Mutex and once without. Without the lock, increments are lost.
//
//   counter_demo [processes] [threads] [increments-per-thread]      (default 4 4 50)
//
// It starts its own ZooKeeper server (Debian's zookeeper package, through dlock::testing) on a free
// loopback port and stops it when done. Each worker process is this program run again with
// --worker; the code a reader would copy is increment_under_lock().
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "dlock/dlock.hpp"
#include "dlock/testing/process.hpp"
#include "dlock/testing/server.hpp"
#include "dlock/testing/temp_dir.hpp"

namespace {

constexpr const char* kLockPath = "/dlock-demo/counter";

long long read_counter(const std::string& file) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char text[32] = {};
  const ssize_t n = ::pread(fd, text, sizeof text - 1, 0);
  ::close(fd);
  return n > 0 ? std::strtoll(text, nullptr, 10) : 0;
}

void write_counter(const std::string& file, long long value) {
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return;
  const std::string text = std::to_string(value) + "\n";
  (void)!::pwrite(fd, text.data(), text.size(), 0);
  ::close(fd);
}

// Read, wait a little (another writer gets in here when nothing stops it), write back plus one.
void increment(const std::string& file) {
  const long long value = read_counter(file);
  std::this_thread::sleep_for(std::chrono::microseconds(200));
  write_counter(file, value + 1);
}

// The lock: one dlock::Mutex per thread on one path, shared by every process through ZooKeeper.
// It is a standard Lockable, so std::scoped_lock holds it for the read-modify-write.
void increment_under_lock(dlock::Mutex& mutex, const std::string& file) {
  std::scoped_lock hold(mutex);
  increment(file);
}

// One worker process: `threads` threads of `increments` each, on one Session.
int worker(const std::string& connect, const std::string& file, int threads, int increments, bool locked) {
  dlock::Session session({.connect = connect});
  std::vector<std::thread> running;
  for (int t = 0; t < threads; ++t) {
    running.emplace_back([&] {
      dlock::Mutex mutex(session, kLockPath);
      for (int i = 0; i < increments; ++i) locked ? increment_under_lock(mutex, file) : increment(file);
    });
  }
  for (auto& thread : running) thread.join();
  return 0;
}

// Starts `processes` workers on one counter file and returns the count they left.
long long run(const std::string& connect, bool locked, int processes, int threads, int increments) {
  dlock::testing::TempDir dir("dlock-demo");
  const std::string file = dir.path() + "/counter";
  write_counter(file, 0);
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  std::vector<dlock::testing::ChildProcess> workers;
  for (int p = 0; p < processes; ++p) {
    workers.emplace_back(std::vector<std::string>{self, "--worker", connect, file, std::to_string(threads),
                                                  std::to_string(increments), locked ? "lock" : "nolock"});
  }
  for (auto& w : workers) {
    if (w.wait() != 0) std::fprintf(stderr, "a worker process failed\n");
  }
  return read_counter(file);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 7 && std::string(argv[1]) == "--worker") {
    return worker(argv[2], argv[3], std::atoi(argv[4]), std::atoi(argv[5]), std::string(argv[6]) == "lock");
  }
  if (argc > 1 && (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h")) {
    std::printf("usage: counter_demo [processes] [threads] [increments-per-thread]   (default 4 4 50)\n");
    return 0;
  }
  const int processes = argc > 1 ? std::atoi(argv[1]) : 4;
  const int threads = argc > 2 ? std::atoi(argv[2]) : 4;
  const int increments = argc > 3 ? std::atoi(argv[3]) : 50;
  if (processes <= 0 || threads <= 0 || increments <= 0) {
    std::fprintf(stderr, "usage: counter_demo [processes>0] [threads>0] [increments-per-thread>0]\n");
    return 2;
  }
  dlock::testing::TestingServer server;
  std::printf("ZooKeeper server started on %s (pid %d)\n", server.connect_string().c_str(), server.pid());
  const long long expected = 1LL * processes * threads * increments;
  std::printf("%d processes x %d threads x %d increments of a counter in a plain file = %lld expected\n", processes,
              threads, increments, expected);
  std::fflush(stdout);
  const long long locked = run(server.connect_string(), true, processes, threads, increments);
  std::printf("  with dlock::Mutex:  counter = %lld  (%s)\n", locked,
              locked == expected ? "exact" : "WRONG: increments lost under the lock");
  std::fflush(stdout);
  const long long unlocked = run(server.connect_string(), false, processes, threads, increments);
  std::printf("  without a lock:     counter = %lld  (%lld increments lost)\n", unlocked, expected - unlocked);
  server.stop();
  std::printf("ZooKeeper server stopped\n");
  return locked == expected ? 0 : 1;
}

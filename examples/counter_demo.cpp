// dlock demo: several processes, each running several threads, increment a counter kept in a
// plain file. Once under a dlock::Mutex, once without; the second run loses increments.
//
//   counter_demo [processes] [threads] [increments-per-thread]      (default 4 4 50)
//
// It starts its own ZooKeeper server (Debian's zookeeper package) on a free loopback port and
// stops it when done. Each worker process is this program run again with --worker.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "counter_worker.hpp"
#include "dlock/testing/process.hpp"
#include "dlock/testing/server.hpp"

namespace {

using dlock::testing::ChildProcess;

int worker_main(char** argv) {
  const auto run = dlock::testing::counter_run_from_args(argv);
  std::printf("%lld\n", static_cast<long long>(dlock::testing::run_counter_worker(run)));
  return 0;
}

long long run(const std::string& connect, bool use_lock, int processes, int threads, int cycles) {
  const std::string dir = dlock::testing::make_temp_dir("dlock-demo");
  const std::string file = dir + "/counter";
  dlock::testing::write_counter(file, 0);
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  std::vector<ChildProcess> workers;
  for (int p = 0; p < processes; ++p) {
    std::vector<std::string> argv{self, "--worker"};
    for (auto& arg : dlock::testing::to_args({.connect = connect,
                     .lock_path = "/dlock-demo/counter",
                     .counter_file = file,
                     .threads = threads,
                     .cycles = cycles,
                     .use_lock = use_lock})) {
      argv.push_back(std::move(arg));
    }
    workers.emplace_back(std::move(argv));
  }
  for (auto& worker : workers) {
    if (worker.wait() != 0) std::fprintf(stderr, "a worker process failed\n");
  }
  const long long count = dlock::testing::read_counter(file);
  std::filesystem::remove_all(dir);
  return count;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 + dlock::testing::kCounterRunArgs && std::string(argv[1]) == "--worker") {
    return worker_main(argv + 2);
  }
  const int processes = argc > 1 ? std::atoi(argv[1]) : 4;
  const int threads = argc > 2 ? std::atoi(argv[2]) : 4;
  const int cycles = argc > 3 ? std::atoi(argv[3]) : 50;
  if (processes <= 0 || threads <= 0 || cycles <= 0) {
    std::fprintf(stderr, "usage: counter_demo [processes>0] [threads>0] [increments-per-thread>0]\n");
    return 2;
  }
  dlock::testing::TestingServer server;
  std::printf("ZooKeeper server started on %s (pid %d)\n", server.connect_string().c_str(), server.pid());
  const long long expected = 1LL * processes * threads * cycles;
  std::printf("%d processes x %d threads x %d increments of a counter in a plain file = %lld expected\n", processes,
              threads, cycles, expected);
  const long long locked = run(server.connect_string(), true, processes, threads, cycles);
  std::printf("  with dlock::Mutex:  counter = %lld  (%s)\n", locked,
              locked == expected ? "exact" : "WRONG: increments lost under the lock");
  const long long unlocked = run(server.connect_string(), false, processes, threads, cycles);
  std::printf("  without a lock:     counter = %lld  (%lld increments lost)\n", unlocked, expected - unlocked);
  server.stop();
  std::printf("ZooKeeper server stopped\n");
  return locked == expected ? 0 : 1;
}

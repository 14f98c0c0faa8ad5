#include "counter_worker.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <stdexcept>
#include <thread>
#include <vector>

#include "dlock/dlock.hpp"

namespace dlock::testing {

std::int64_t read_counter(const std::string& file) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buffer[32] = {};
  const ssize_t n = ::pread(fd, buffer, sizeof buffer - 1, 0);
  ::close(fd);
  return n > 0 ? std::strtoll(buffer, nullptr, 10) : 0;
}

void write_counter(const std::string& file, std::int64_t value) {
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error("cannot open " + file);
  const std::string text = std::to_string(value) + "\n";
  const ssize_t written = ::pwrite(fd, text.data(), text.size(), 0);
  ::ftruncate(fd, static_cast<off_t>(text.size()));
  ::close(fd);
  if (written != static_cast<ssize_t>(text.size())) throw std::runtime_error("cannot write " + file);
}

std::vector<std::string> to_args(const CounterRun& run) {
  return {run.connect,
          run.lock_path,
          run.counter_file,
          std::to_string(run.threads),
          std::to_string(run.cycles),
          run.use_lock ? "lock" : "nolock"};
}

CounterRun counter_run_from_args(char** argv) {
  return {.connect = argv[0],
          .lock_path = argv[1],
          .counter_file = argv[2],
          .threads = std::atoi(argv[3]),
          .cycles = std::atoi(argv[4]),
          .use_lock = std::string(argv[5]) == "lock"};
}

std::int64_t run_counter_worker(const CounterRun& run) {
  Session session({.connect = run.connect, .session_timeout = run.session_timeout});
  std::atomic<std::int64_t> done{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < run.threads; ++t) {
    threads.emplace_back([&] {
      Mutex mutex(session, run.lock_path);
      for (int i = 0; i < run.cycles; ++i) {
        if (run.use_lock) mutex.lock();
        const auto value = read_counter(run.counter_file);
        // Widens the race window: without the lock, another writer gets in here.
        std::this_thread::sleep_for(std::chrono::microseconds(200));
        write_counter(run.counter_file, value + 1);
        if (run.use_lock) mutex.unlock();
        done.fetch_add(1);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  return done.load();
}

}  // namespace dlock::testing

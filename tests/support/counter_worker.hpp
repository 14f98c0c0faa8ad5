// Test and demo support: threads that increment a counter kept in a plain file, with or without
// a dlock::Mutex around each read-modify-write. Without the lock, concurrent increments are lost;
// with it, the final count equals the number of increments.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace dlock::testing {

struct CounterRun {
  std::string connect;       // ZooKeeper connect string
  std::string lock_path;     // lock directory
  std::string counter_file;  // a file holding one decimal number
  int threads = 4;
  int cycles = 100;  // per thread
  bool use_lock = true;
  std::chrono::milliseconds session_timeout{4000};
};

// Runs `threads` x `cycles` increments on one shared Session; returns the increments made.
std::int64_t run_counter_worker(const CounterRun& run);

// How a parent hands a run to a worker process on its command line, and how the worker reads it
// back: six arguments, the inverse of each other.
inline constexpr int kCounterRunArgs = 6;
std::vector<std::string> to_args(const CounterRun& run);
CounterRun counter_run_from_args(char** argv);  // reads kCounterRunArgs arguments

std::int64_t read_counter(const std::string& file);
void write_counter(const std::string& file, std::int64_t value);

}  // namespace dlock::testing

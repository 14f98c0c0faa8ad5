// One instance of the drawing service: a process with one dlock::Session and a PostgreSQL
// connection per worker thread, drawing for its own users.
//
// Protocol with the process that started it (main.cpp), on stdin/stdout: the instance prints
// "ready" once connected, waits for a line "go", draws, and prints one line
//   result draws=<n> errors=<n> retries=<n> requests=<ZooKeeper requests sent while drawing>
//          local_grants=<n> zookeeper_grants=<n>   (the pool lock's grants, from dlock's metrics)
//          batches=<n> (dlock-batch: batches served) latency_us=<each draw's latency, comma-separated>
// and exits 0 (1 if a draw failed; the first error goes to stderr).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "dlock/handoff.hpp"
#include "variant.hpp"

namespace prize_draw {

struct InstanceOptions {
  std::string zk;  // ZooKeeper connect string (dlock variants)
  std::string db;  // libpq conninfo
  std::string name;
  int index = 0;  // of this instance among those started together: users differ per instance
  Variant variant = Variant::dlock;
  int threads = 8;
  int draws = 200;  // per thread
  std::int64_t pool = 1;
  std::chrono::microseconds think{0};
  dlock::HandoffOptions handoff;  // the dlock variant's (dlock-nohandoff turns `local` off)
};

int run_instance(const InstanceOptions& options);

}  // namespace prize_draw

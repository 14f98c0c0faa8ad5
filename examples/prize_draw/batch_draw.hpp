// The dlock-batch variant: an instance's draws of one pool go through one dlock::BatchLock. The
// thread that holds the pool's lock serves every draw queued behind it in one transaction (one
// COMMIT for the batch), fenced in PostgreSQL with the batch's token (dlock/postgres/fence.hpp),
// and every draw gets its own result.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <random>
#include <string>

#include "dlock/batch.hpp"
#include "dlock/scope.hpp"
#include "draw.hpp"
#include "pg_connection.hpp"

namespace prize_draw {

// Thread-safe: any number of worker threads call draw() at once.
class BatchDrawer {
 public:
  // Locks `locks.path_for("pool", key of a request for `pool`)`, the path the dlock variants'
  // DLOCK_SCOPE locks, so they all exclude each other. Batches use a connection of their own to
  // `conninfo` (one batch runs at a time). Throws dlock::postgres::DatabaseError, dlock::Error.
  BatchDrawer(dlock::Session& session, const dlock::LockService& locks, std::int64_t pool, const std::string& conninfo,
              std::string instance, std::chrono::microseconds think, std::uint64_t seed,
              dlock::BatchOptions options = {});

  // Draws once from the pool this drawer serves. Throws what the batch's transaction threw.
  DrawResult draw(const DrawRequest& req) { return lock_.submit(req); }
  // Batches served so far (each one lock use, one transaction).
  long long batches() const noexcept { return batches_.load(); }

 private:
  using Lock = dlock::BatchLock<DrawRequest, DrawResult>;
  // One transaction for the batch: fence, read the stock once, pick a prize per draw, write the
  // stock and the draws in one statement each, COMMIT.
  void serve(Lock::Batch& batch);

  dlock_examples::PgConnection db_;  // used by the batch being served only
  std::int64_t pool_;
  std::string resource_;  // what the fence names: the pool's lock path
  std::string instance_;
  std::chrono::microseconds think_;
  std::mt19937_64 random_;  // used by the batch being served only
  std::atomic<long long> batches_{0};
  Lock lock_;
};

}  // namespace prize_draw

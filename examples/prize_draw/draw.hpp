// One draw: pick a prize among those of the pool still in stock, take one from its stock, record
// the draw, all in one PostgreSQL transaction, guarded as the Variant says.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <random>
#include <string>

#include "dlock/key.hpp"
#include "dlock/scope.hpp"
#include "pg_connection.hpp"
#include "pg_transaction.hpp"
#include "variant.hpp"

namespace prize_draw {

// The lock key is the tagged field: DLOCK_SCOPE(..., "pool", req) locks <base>/pool/<pool>.
struct DrawRequest {
  dlock::key<std::int64_t, 1> pool;
  std::int64_t user = 0;
};

struct DrawResult {
  std::optional<std::int64_t> prize;  // nullopt: the pool was empty
  int retries = 0;                    // optimistic conflicts before the draw went through
};

// Not thread-safe (it keeps a random generator): one per worker thread.
class Drawer {
 public:
  // `locks` is used by the dlock variants only (may be null otherwise). `think` is spent between
  // reading the stock and writing it back: the work of deciding (a call to a rules service, say).
  Drawer(Variant variant, const dlock::LockService* locks, std::string instance, std::chrono::microseconds think,
         std::uint64_t seed);

  // Draws once on `db`. Throws dlock::postgres::DatabaseError, dlock::LockTimeout, dlock::Error.
  DrawResult draw(const DrawRequest& req, dlock_examples::PgConnection& db);

 private:
  struct Attempt {
    bool conflict = false;  // optimistic only: another draw changed the prize first
    std::optional<std::int64_t> prize;
  };
  // Reads the prizes in stock (locking their rows with FOR UPDATE if asked), picks one, writes its
  // stock back minus one (only if its version is still the one read, for the optimistic variant),
  // and records the draw with `fence`.
  Attempt take_one(const DrawRequest& req, dlock_examples::PgTransaction& tx, std::optional<std::int64_t> fence);

  Variant variant_;
  const dlock::LockService* locks_;
  std::string instance_;
  std::chrono::microseconds think_;
  std::mt19937_64 random_;
};

}  // namespace prize_draw

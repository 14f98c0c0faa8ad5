// The prize pool in PostgreSQL: prizes with a stock each, and one row per draw.
//
//   prize(id, pool, name, initial_stock, stock, version)
//   draw(id, pool, user_id, prize NULL when the pool was empty, fence, instance)
//
// A prize is oversold when more draws name it than its initial stock: the customer was promised
// something that is not there.
#pragma once

#include <cstdint>
#include <string>

#include "pg_connection.hpp"

namespace prize_draw {

// Creates the tables if missing.
void create_schema(dlock_examples::PgConnection& db);
// Empties `pool` and stocks it with `prizes` prizes of `stock_each` each.
void restock(dlock_examples::PgConnection& db, std::int64_t pool, int prizes, int stock_each);

struct PoolTally {
  std::int64_t draws = 0;        // rows in draw
  std::int64_t awarded = 0;      // draws that named a prize
  std::int64_t stock_left = 0;   // sum of the prizes' stock now
  std::int64_t oversold = 0;     // sum over prizes of max(0, draws naming it - its initial stock)
  std::int64_t lost_writes = 0;  // sum over prizes of |initial - stock now - draws naming it|
  std::int64_t unfenced = 0;     // draws recorded without a fencing token
};
PoolTally tally(dlock_examples::PgConnection& db, std::int64_t pool);

}  // namespace prize_draw

// The ways the prize draw guards a pool's stock: the variants the one command compares.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

namespace prize_draw {

enum class Variant {
  none,             // no guard: read the stock, write it back minus one (the story's bug)
  for_update,       // SELECT ... FOR UPDATE on the pool's prizes in stock
  optimistic,       // a version column: UPDATE ... WHERE version = $read, retried on conflict
  dlock_nohandoff,  // DLOCK_SCOPE bound to the transaction, a ZooKeeper node per draw
  dlock,            // DLOCK_SCOPE bound to the transaction, local hand-off on (the default)
  dlock_batch,      // a BatchLock: the holder serves every queued draw of its instance in one
                    // transaction, fenced in PostgreSQL (batch_draw.hpp)
};

std::string_view to_string(Variant variant) noexcept;
// Nullopt unless `text` is one of the names to_string gives.
std::optional<Variant> parse_variant(std::string_view text) noexcept;
// Every variant, in the order the comparison runs them.
const std::vector<Variant>& all_variants();
// Whether the variant is meant to keep the stock right (all but `none`).
bool guards_stock(Variant variant) noexcept;
// Whether the variant takes the pool's lock through dlock (and records a fencing token per draw).
bool uses_dlock(Variant variant) noexcept;

}  // namespace prize_draw

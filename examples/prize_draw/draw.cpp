#include "draw.hpp"

#include <stdexcept>
#include <thread>

namespace prize_draw {

using dlock_examples::PgConnection;
using dlock_examples::PgTransaction;

Drawer::Drawer(Variant variant, const dlock::LockService* locks, std::string instance, std::chrono::microseconds think,
               std::uint64_t seed)
    : variant_(variant), locks_(locks), instance_(std::move(instance)), think_(think), random_(seed) {
  if (uses_dlock(variant) && locks == nullptr) {
    throw std::invalid_argument("Drawer: variant " + std::string(to_string(variant)) + " needs a LockService");
  }
}

DrawResult Drawer::draw(const DrawRequest& req, PgConnection& db) {
  switch (variant_) {
    case Variant::none:
    case Variant::for_update: {
      PgTransaction tx(db);
      const auto attempt = take_one(req, tx, std::nullopt);
      tx.commit();
      return {attempt.prize, 0};
    }
    case Variant::optimistic:
      for (int retries = 0;; ++retries) {
        PgTransaction tx(db);
        const auto attempt = take_one(req, tx, std::nullopt);
        if (attempt.conflict) continue;  // tx rolls back; read again
        tx.commit();
        return {attempt.prize, retries};
      }
    case Variant::dlock_batch:  // served by BatchDrawer, never here
      throw std::logic_error("Drawer: dlock-batch draws through a BatchDrawer");
    case Variant::dlock_nohandoff:
    case Variant::dlock: {
      PgTransaction tx(db);
      // Released by tx's completion hook, after COMMIT: the next draw reads this one's stock.
      DLOCK_SCOPE_AS(lock, locks_->bound_to(tx), "pool", req);
      const auto attempt = take_one(req, tx, lock.fencing_token());
      tx.commit();
      return {attempt.prize, 0};
    }
  }
  throw std::logic_error("unknown variant");
}

Drawer::Attempt Drawer::take_one(const DrawRequest& req, PgTransaction& tx, std::optional<std::int64_t> fence) {
  const std::string pool = std::to_string(*req.pool);
  const auto in_stock =
      tx.exec(variant_ == Variant::for_update
                  ? "SELECT id, stock, version FROM prize WHERE pool = $1 AND stock > 0 ORDER BY id FOR UPDATE"
                  : "SELECT id, stock, version FROM prize WHERE pool = $1 AND stock > 0 ORDER BY id",
              {pool});
  Attempt attempt;
  if (in_stock.rows() > 0) {
    const int row = static_cast<int>(random_() % static_cast<std::uint64_t>(in_stock.rows()));
    const std::int64_t prize = in_stock.int64(row, 0);
    const std::int64_t stock = in_stock.int64(row, 1);
    if (think_.count() > 0) std::this_thread::sleep_for(think_);
    // The new stock is computed here, from what was read: without a guard two draws that read the
    // same stock both write stock - 1, and one prize is handed out twice.
    if (variant_ == Variant::optimistic) {
      const auto updated =
          tx.exec("UPDATE prize SET stock = $2, version = version + 1 WHERE id = $1 AND version = $3",
                  {std::to_string(prize), std::to_string(stock - 1), std::string(in_stock.text(row, 2))});
      if (updated.command_status() != "UPDATE 1") return {.conflict = true, .prize = std::nullopt};
    } else {
      tx.exec("UPDATE prize SET stock = $2 WHERE id = $1", {std::to_string(prize), std::to_string(stock - 1)});
    }
    attempt.prize = prize;
  }
  tx.exec("INSERT INTO draw (pool, user_id, prize, fence, instance) VALUES ($1, $2, $3, $4, $5)",
          {pool, std::to_string(req.user), attempt.prize ? std::optional(std::to_string(*attempt.prize)) : std::nullopt,
           fence ? std::optional(std::to_string(*fence)) : std::nullopt, instance_});
  return attempt;
}

}  // namespace prize_draw

// Compile test (see CMakeLists.txt here): every DLOCK_SCOPE macro with every kind of `locks`
// argument the documentation of dlock/scope.hpp promises: a LockService, `with_timeout`,
// `bound_to`, and both chained in either order. Nothing here runs; the file only has to compile
// with -Wall -Wextra -Werror, with GCC and with clang (clang checks the non-dependent parts of a
// template where it is defined, GCC only where it is used, so the two catch different mistakes).
// The calls are written out one by one, as a handler would write them, rather than generated,
// so a macro argument that only breaks in one spelling is caught too.
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "dlock/scope.hpp"

namespace {

using namespace std::chrono_literals;

struct CartRequest {
  dlock::key<std::int64_t, 1> user;
  std::string note;  // not part of the key
};

// The smallest transaction the Transaction concept accepts.
class Tx {
 public:
  void on_complete(std::function<void()> hook) { hooks_.add(std::move(hook)); }

 private:
  dlock::CompletionHooks hooks_;
};
static_assert(dlock::Transaction<Tx>);

void plain(const dlock::LockService& locks, const CartRequest& req) {
  DLOCK_SCOPE(locks, "a", req);
  DLOCK_SCOPE_READ(locks, "b", req, "eur");
  DLOCK_SCOPE_WRITE(locks, "c", 1);
  DLOCK_SCOPE_EACH(locks, "d", "x", "y");
  DLOCK_SCOPE_AS(named, locks, "e", req);
  (void)named.fencing_token();
}

void with_timeout(const dlock::LockService& locks, const CartRequest& req) {
  DLOCK_SCOPE(locks.with_timeout(2s), "a", req);
  DLOCK_SCOPE_READ(locks.with_timeout(2s), "b", req, "eur");
  DLOCK_SCOPE_WRITE(locks.with_timeout(2s), "c", 1);
  DLOCK_SCOPE_EACH(locks.with_timeout(2s), "d", "x", "y");
  DLOCK_SCOPE_AS(named, locks.with_timeout(2s), "e", req);
  (void)named.fencing_token();
}

void bound_to(const dlock::LockService& locks, Tx& tx, const CartRequest& req) {
  DLOCK_SCOPE(locks.bound_to(tx), "a", req);
  DLOCK_SCOPE_READ(locks.bound_to(tx), "b", req, "eur");
  DLOCK_SCOPE_WRITE(locks.bound_to(tx), "c", 1);
  DLOCK_SCOPE_EACH(locks.bound_to(tx), "d", "x", "y");
  DLOCK_SCOPE_AS(named, locks.bound_to(tx), "e", req);
  (void)named.bound();
}

void timeout_then_bound(const dlock::LockService& locks, Tx& tx, const CartRequest& req) {
  DLOCK_SCOPE(locks.with_timeout(2s).bound_to(tx), "a", req);
  DLOCK_SCOPE_READ(locks.with_timeout(2s).bound_to(tx), "b", req, "eur");
  DLOCK_SCOPE_WRITE(locks.with_timeout(2s).bound_to(tx), "c", 1);
  DLOCK_SCOPE_EACH(locks.with_timeout(2s).bound_to(tx), "d", "x", "y");
  DLOCK_SCOPE_AS(named, locks.with_timeout(2s).bound_to(tx), "e", req);
  (void)named.bound();
}

void bound_then_timeout(const dlock::LockService& locks, Tx& tx, const CartRequest& req) {
  DLOCK_SCOPE(locks.bound_to(tx).with_timeout(2s), "a", req);
  DLOCK_SCOPE_READ(locks.bound_to(tx).with_timeout(2s), "b", req, "eur");
  DLOCK_SCOPE_WRITE(locks.bound_to(tx).with_timeout(2s), "c", 1);
  DLOCK_SCOPE_EACH(locks.bound_to(tx).with_timeout(2s), "d", "x", "y");
  DLOCK_SCOPE_AS(named, locks.bound_to(tx).with_timeout(2s), "e", req);
  (void)named.bound();
}

// Not macros, but the same views: keys known only at run time (a cart's items).
void key_lists(const dlock::LockService& locks, Tx& tx, const std::vector<std::string>& keys) {
  const auto plain_each = locks.lock_keys(dlock::LockMode::Exclusive, "f", keys);
  const auto plain_one = locks.lock_key(dlock::LockMode::Read, "g", keys.front());
  const auto bound_each = locks.bound_to(tx).lock_keys(dlock::LockMode::Exclusive, "h", keys);
  const auto bound_one = locks.bound_to(tx).lock_key(dlock::LockMode::Write, "i", keys.front());
  const auto chained_each = locks.with_timeout(2s).bound_to(tx).lock_keys(dlock::LockMode::Exclusive, "j", keys);
  const auto chained_one = locks.bound_to(tx).with_timeout(2s).lock_key(dlock::LockMode::Exclusive, "k", keys.front());
}

}  // namespace

// Referenced from one external function so that -Wunused-function stays quiet and every
// function above is compiled in full.
void dlock_scope_macros_compile_test(const dlock::LockService& locks) {
  Tx tx;
  const CartRequest req{.user = 1, .note = ""};
  plain(locks, req);
  with_timeout(locks, req);
  bound_to(locks, tx, req);
  timeout_then_bound(locks, tx, req);
  bound_then_timeout(locks, tx, req);
  key_lists(locks, tx, {dlock::make_key("x"), dlock::make_key("y")});
}

// docs/LOCKS.md's declarative lock bound to a transaction. The fragment names a `session`, a
// PgTransaction and an Account; here a Session at namespace scope (only this scaffolding has one:
// the docs advise against it in a service), and a transaction that is a dlock::Transaction
// (on_complete) whose commit() runs its hooks, as a real one runs them after COMMIT returned.
// The run checks what the page says: the lock outlives the guard, and goes with the commit.
#include <dlock/dlock.hpp>
#include <dlock/inspect.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>
#include <vector>

extern "C" const char* dlock_snippet_connect() noexcept;

dlock::Session session({.connect = dlock_snippet_connect()});

struct Account {
  std::int64_t uid = 0;
};

class PgTransaction {
 public:
  void on_complete(std::function<void()> hook) { hooks_.push_back(std::move(hook)); }
  void commit() {
    for (auto& hook : hooks_) hook();
    hooks_.clear();
  }

 private:
  std::vector<std::function<void()>> hooks_;
};

struct LoginRequest;
Account insert_account(PgTransaction& tx, const LoginRequest& req);

// @snippet

Account insert_account(PgTransaction&, const LoginRequest& req) { return Account{*req.uid}; }

namespace {

// Contenders queued on the uid's lock, waiting up to 5 s for `expected` (a release is sent, not
// awaited).
bool contenders_become(std::size_t expected) {
  for (int i = 0; i < 100; ++i) {
    if (dlock::inspect(session, "/locks/login/42").contenders.size() == expected) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

}  // namespace

int main() {
  PgTransaction tx;
  const Account account = login(LoginRequest{.uid = 42, .device = "phone"}, tx);
  if (account.uid != 42 || !contenders_become(1)) {
    std::puts("the lock of uid 42 is not held after login() returned, before the commit");
    return 1;
  }
  tx.commit();
  if (!contenders_become(0)) {
    std::puts("the lock of uid 42 is still held after the commit");
    return 1;
  }
  std::puts("login: the lock of uid 42 was held until the transaction committed");
}

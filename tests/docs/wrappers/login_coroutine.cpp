// docs/LOCKS.md's coroutine handler (DLOCK_CO_SCOPE). It names `asio`, a LoginRequest, an Account and
// create_once(); create_once() here checks what the page says: while the coroutine runs, its
// uid's lock is held. The run drives login() on an io_context, as a Beast server would.
#include <dlock/async.hpp>
#include <dlock/dlock.hpp>
#include <dlock/inspect.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <optional>
#include <string>

extern "C" const char* dlock_snippet_connect() noexcept;

namespace asio = boost::asio;

struct LoginRequest {
  dlock::key<std::int64_t, 1> uid;
  std::string device;
};

struct Account {
  std::int64_t uid = 0;
  bool created_under_the_lock = false;
};

dlock::Session* current_session = nullptr;

asio::awaitable<Account> create_once(const LoginRequest& req) {
  const auto queue = dlock::inspect(*current_session, "/locks/login/" + std::to_string(*req.uid));
  co_return Account{*req.uid, queue.contenders.size() == 1 && queue.contenders.front().holds};
}

// @snippet

int main() {
  dlock::Session session({.connect = dlock_snippet_connect()});
  current_session = &session;
  dlock::LockService locks(session, "/locks");
  asio::io_context io;
  std::optional<Account> account;
  std::exception_ptr error;
  asio::co_spawn(io, login(locks, LoginRequest{.uid = 42, .device = "phone"}), [&](std::exception_ptr e, Account a) {
    error = e;
    account = a;
  });
  io.run();
  if (error) std::rethrow_exception(error);
  if (!account || account->uid != 42 || !account->created_under_the_lock) {
    std::puts("login() did not create the account of uid 42 under its lock");
    return 1;
  }
  std::puts("login: the account of uid 42 was created under its lock, on a coroutine");
}

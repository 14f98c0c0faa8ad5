// Compile-only: every asynchronous form and DLOCK_CO_SCOPE macro with every kind of `locks`
// argument and every completion token the header documents, instantiated (clang and GCC).
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_future.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "dlock/async.hpp"

namespace {

struct Request {
  dlock::key<std::int64_t, 1> id;
};

struct Tx {
  void on_complete(std::function<void()> hook) { hooks.add(std::move(hook)); }
  dlock::CompletionHooks hooks;
};

boost::asio::awaitable<void> handler(dlock::LockService locks, Tx& tx) {
  {
    DLOCK_CO_SCOPE(locks, "orders", Request{.id = 1});
    DLOCK_CO_SCOPE_READ(locks.with_timeout(std::chrono::seconds(1)), "catalog", 2);
    DLOCK_CO_SCOPE_WRITE(locks.holder(), "prices", std::string("x"));
    DLOCK_CO_SCOPE_EACH(locks, "stock", 1, 2, 3);
    DLOCK_CO_SCOPE_AS(named, locks.bound_to(tx), "login", 7);
    (void)named.fencing_token();
    DLOCK_CO_SCOPE_EACH(locks.bound_to(tx).holder(), "cart", 4, 5);
  }
  boost::system::error_code ec;
  auto a = co_await locks.async_lock_key(dlock::LockMode::Exclusive, "k", dlock::make_key(1),
                                         boost::asio::redirect_error(boost::asio::use_awaitable, ec));
  // (Not a braced list inside the co_await: GCC 12 rejects an initializer_list's array in a
  // coroutine's temporaries, "array used as initializer".)
  std::vector<std::string> keys{"1"};
  auto [ec2, b] = co_await locks.async_lock_keys(dlock::LockMode::Read, "k", std::move(keys),
                                                 boost::asio::as_tuple(boost::asio::use_awaitable));
  (void)ec2;
  (void)b;
  (void)a;
}

void tokens(dlock::Session& session, boost::asio::io_context& ctx) {
  boost::asio::cancellation_signal signal;
  dlock::LockHandle::async_acquire(
      session, "/p", dlock::LockMode::Exclusive,
      boost::asio::bind_cancellation_slot(signal.slot(), [](boost::system::error_code, dlock::LockHandle) {}));
  std::future<dlock::LockHandle> f = dlock::LockHandle::async_try_acquire_for(
      session, "/p", dlock::LockMode::Read, std::chrono::milliseconds(5), boost::asio::use_future);
  auto op = dlock::LockHandle::async_acquire(session, "/p", dlock::LockMode::Write, boost::asio::deferred);
  std::move(op)([](boost::system::error_code, dlock::LockHandle) {});
  (void)f;
  (void)ctx;
}

}  // namespace

int main() {
  (void)&handler;
  (void)&tokens;
}

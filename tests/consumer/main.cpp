// A user's program, built against the installed package only (find_package(dlock), dlock::dlock).
// It is what GETTING-STARTED's "Use it in your own project" shows: the Session is made inside main(), not
// at namespace scope (its constructor connects and may throw; a global's exception could not be
// caught), and a handler locks with DLOCK_SCOPE and with a Mutex.
//
//   consumer [connect string]
// With a ZooKeeper server at the connect string it takes both locks and releases them. Without
// one (the packaging test passes nothing: 127.0.0.1:1, a closed port) the Session must throw a
// ConnectError naming the connect string; the locking code is compiled and linked either way.
#include <dlock/async.hpp>
#include <dlock/dlock.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>

namespace {

struct ChargeRequest {
  dlock::key<std::int64_t, 1> order;
};

void charge(const dlock::LockService& locks, dlock::Mutex& ledger, const ChargeRequest& req) {
  DLOCK_SCOPE(locks, "orders", req);  // /consumer/orders/<order>, released at the end of scope
  std::scoped_lock guard(ledger);     // the standard lock interface works on dlock::Mutex
  std::printf("consumer: order %lld charged under fencing token %lld\n", static_cast<long long>(*req.order),
              static_cast<long long>(ledger.fencing_token()));
}

boost::asio::awaitable<void> charge_async(dlock::LockService locks, ChargeRequest req) {
  DLOCK_CO_SCOPE_AS(guard, locks, "orders", req);  // waits without a thread
  std::printf("consumer: order %lld charged asynchronously under fencing token %lld\n",
              static_cast<long long>(*req.order), static_cast<long long>(guard.fencing_token()));
}

}  // namespace

int main(int argc, char** argv) {
  const bool server_given = argc > 1;
  const std::string connect = server_given ? argv[1] : "127.0.0.1:1";
  try {
    dlock::Session session(
        {.connect = connect, .connect_timeout = std::chrono::milliseconds(server_given ? 5000 : 300)});
    dlock::LockService locks(session, "/consumer");
    dlock::Mutex ledger(session, "/consumer/ledger");
    charge(locks, ledger, ChargeRequest{.order = 42});
    boost::asio::io_context io;
    boost::asio::co_spawn(io, charge_async(locks, ChargeRequest{.order = 43}), boost::asio::detached);
    io.run();
    std::puts("consumer: find_package(dlock) + dlock::dlock work, locks taken and released");
    return 0;
  } catch (const dlock::ConnectError& e) {
    if (!server_given && std::string(e.what()).find(connect) != std::string::npos) {
      std::puts("consumer: find_package(dlock) + dlock::dlock work (no server: ConnectError as expected)");
      return 0;
    }
    std::fprintf(stderr, "consumer: %s\n", e.what());
  } catch (const dlock::Error& e) {
    std::fprintf(stderr, "consumer: %s\n", e.what());
  }
  return 1;
}

// The holder process of the paused-holder tests (paused_holder.hpp), written once for every store:
// each store's holder program (tests/<store>/fenced_holder.cpp) gives its traits and calls
// run_fenced_holder.
//
//   <program> <zk connect> <session timeout ms> <lock base> <database> <owner> fenced|unfenced
//
// Takes <lock base>/account/1 through DLOCK_SCOPE bound to the store's Transaction (fenced) or to
// the same transaction seen without fence() (unfenced, the negative control). Once granted, and
// before the fence, it prints "GRANTED <token>" and waits for a line "GO" on stdin: the test stops
// it there, past its session timeout. Then it sets account 1's owner to <owner> and commits.
// Exit status: 0 committed, kHolderExitStale refused as stale (StaleFencingToken; "STALE
// <message>" printed), 1 any other error (printed on stderr).
//
// A Store has: `using Transaction` (a dlock FencedTransaction); `static auto connect(const
// std::string& database)` (an owning connection); `static auto* native(connection)` (what
// Transaction's constructor takes); `static constexpr const char* kSetOwner` (the UPDATE of
// account 1's owner with one text parameter).
#pragma once

#include <chrono>
#include <functional>
#include <iostream>
#include <string>
#include <string_view>

#include "dlock/dlock.hpp"
#include "fencing/paused_holder.hpp"

namespace dlock::testing {

namespace holder_detail {

inline void report_grant_and_wait(std::int64_t token) {
  std::cout << "GRANTED " << token << std::endl;
  std::string line;
  while (std::getline(std::cin, line) && line != "GO") {
  }
}

// The transaction, with the stop between the grant and the fence.
template <class Tx>
struct StoppingBeforeFence {
  Tx& tx;
  void on_complete(std::function<void()> hook) { tx.on_complete(std::move(hook)); }
  void fence(std::string_view resource, std::int64_t token) {
    report_grant_and_wait(token);
    tx.fence(resource, token);
  }
};
// The same transaction without fence(): bound, never fenced.
template <class Tx>
struct WithoutFence {
  Tx& tx;
  void on_complete(std::function<void()> hook) { tx.on_complete(std::move(hook)); }
};

template <class Store>
int run(int argc, char** argv, const char* program) {
  if (argc != 7) {
    std::cerr << "usage: " << program << " <zk> <session-timeout-ms> <base> <database> <owner> fenced|unfenced\n";
    return 1;
  }
  using Tx = typename Store::Transaction;
  static_assert(FencedTransaction<StoppingBeforeFence<Tx>> && !FencedTransaction<WithoutFence<Tx>>);
  const std::string mode = argv[6];
  const std::string owner = argv[5];
  Session session({.connect = argv[1],
                   .session_timeout = std::chrono::milliseconds(std::stoi(argv[2])),
                   .renew_expired_session = false});
  const LockService locks(session, argv[3]);
  auto conn = Store::connect(argv[4]);
  Tx tx(Store::native(conn));
  if (mode == "fenced") {
    StoppingBeforeFence<Tx> stopping{tx};
    DLOCK_SCOPE(locks.bound_to(stopping), "account", 1);
    tx.exec(Store::kSetOwner, {std::string_view(owner)});
    tx.commit();
  } else {
    WithoutFence<Tx> unfenced{tx};
    DLOCK_SCOPE_AS(guard, locks.bound_to(unfenced), "account", 1);
    report_grant_and_wait(guard.fencing_token());
    tx.exec(Store::kSetOwner, {std::string_view(owner)});
    tx.commit();
  }
  std::cout << "COMMITTED" << std::endl;
  return 0;
}

}  // namespace holder_detail

template <class Store>
int run_fenced_holder(int argc, char** argv, const char* program) {
  try {
    return holder_detail::run<Store>(argc, argv, program);
  } catch (const StaleFencingToken& e) {
    std::cout << "STALE " << e.what() << std::endl;
    return kHolderExitStale;
  } catch (const std::exception& e) {
    std::cerr << program << ": " << e.what() << std::endl;
    return 1;
  }
}

}  // namespace dlock::testing

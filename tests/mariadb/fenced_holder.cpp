// dlock_mariadb_fenced_holder: one holder of a lock whose writes go to MariaDB, as a process of its
// own, for the paused-holder test (paused_holder_test.cpp), which stops it with SIGSTOP.
//
//   dlock_mariadb_fenced_holder <zk connect> <session timeout ms> <lock base> <connect-options> <owner> fenced|unfenced
//
// Takes <lock base>/account/1 through DLOCK_SCOPE bound to a dlock::mariadb::Transaction (fenced)
// or to the same transaction seen without fence() (unfenced, the negative control). Once granted,
// and before the fence, it prints "GRANTED <token>" and waits for a line "GO" on stdin: the test
// stops it there, past its session timeout. Then it sets account 1's owner to <owner> and commits.
// Exit status: 0 committed, 3 refused as stale (StaleFencingToken; "STALE <message>" printed),
// 1 any other error (printed on stderr).
#include <cstdio>
#include <functional>
#include <iostream>
#include <string>
#include <string_view>

#include "dlock/dlock.hpp"
#include "dlock/mariadb/transaction.hpp"
#include "mariadb/fenced_holder.hpp"
#include "mariadb/mariadb_connect.hpp"

namespace {

using dlock::mariadb::Transaction;

// Prints GRANTED and waits for GO: where the test stops this process.
void report_grant_and_wait(std::int64_t token) {
  std::cout << "GRANTED " << token << std::endl;
  std::string line;
  while (std::getline(std::cin, line) && line != "GO") {
  }
}

// The transaction, with the stop between the grant and the fence.
struct StoppingBeforeFence {
  Transaction& tx;
  void on_complete(std::function<void()> hook) { tx.on_complete(std::move(hook)); }
  void fence(std::string_view resource, std::int64_t token) {
    report_grant_and_wait(token);
    tx.fence(resource, token);
  }
};
// The same transaction without fence(): bound, never fenced.
struct WithoutFence {
  Transaction& tx;
  void on_complete(std::function<void()> hook) { tx.on_complete(std::move(hook)); }
};
static_assert(dlock::FencedTransaction<StoppingBeforeFence> && !dlock::FencedTransaction<WithoutFence>);

int run(int argc, char** argv) {
  if (argc != 7) {
    std::cerr << "usage: dlock_mariadb_fenced_holder <zk> <session-timeout-ms> <base> <connect-options> <owner> "
                 "fenced|unfenced\n";
    return 1;
  }
  const std::string mode = argv[6];
  dlock::Session session({.connect = argv[1],
                          .session_timeout = std::chrono::milliseconds(std::stoi(argv[2])),
                          .renew_expired_session = false});
  const dlock::LockService locks(session, argv[3]);
  auto conn = dlock::testing::connect_mariadb(argv[4]);
  Transaction tx(conn.get());
  if (mode == "fenced") {
    StoppingBeforeFence stopping{tx};
    DLOCK_SCOPE(locks.bound_to(stopping), "account", 1);
    tx.exec("UPDATE account SET owner = ? WHERE id = 1", {argv[5]});
    tx.commit();
  } else {
    WithoutFence unfenced{tx};
    DLOCK_SCOPE_AS(guard, locks.bound_to(unfenced), "account", 1);
    report_grant_and_wait(guard.fencing_token());
    tx.exec("UPDATE account SET owner = ? WHERE id = 1", {argv[5]});
    tx.commit();
  }
  std::cout << "COMMITTED" << std::endl;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const dlock::StaleFencingToken& e) {
    std::cout << "STALE " << e.what() << std::endl;
    return dlock::testing::kHolderExitStale;
  } catch (const std::exception& e) {
    std::cerr << "dlock_mariadb_fenced_holder: " << e.what() << std::endl;
    return 1;
  }
}

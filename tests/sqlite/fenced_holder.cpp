// dlock_sqlite_fenced_holder: the paused-holder test's holder process
// (tests/fencing/fenced_holder.hpp) with its writes in a SQLite file shared with the test;
// <database> is the file. Its fence comes before any write, so it takes the file's write lock
// only after the stop.
#include "fencing/fenced_holder.hpp"
#include "dlock/sqlite/transaction.hpp"
#include "sqlite/sqlite_file.hpp"

namespace {

struct Sqlite {
  using Transaction = dlock::sqlite::Transaction;
  static auto connect(const std::string& file) { return dlock::testing::sqlite_open(file); }
  static sqlite3* native(const dlock::testing::SqliteConnection& db) { return db.get(); }
  static constexpr const char* kSetOwner = "UPDATE account SET owner = ?1 WHERE id = 1";
};

}  // namespace

int main(int argc, char** argv) {
  return dlock::testing::run_fenced_holder<Sqlite>(argc, argv, "dlock_sqlite_fenced_holder");
}

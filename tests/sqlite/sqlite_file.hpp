// A SQLite database file for the dlock::sqlite tests: opened with a busy timeout (writers of one
// file take turns), closed by the destructor.
#pragma once

#include <sqlite3.h>

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>

namespace dlock::testing {

using SqliteConnection = std::unique_ptr<sqlite3, decltype(&sqlite3_close)>;

inline SqliteConnection sqlite_open(const std::string& file,
                                    std::chrono::milliseconds busy_timeout = std::chrono::seconds(10)) {
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open(file.c_str(), &raw);
  SqliteConnection db(raw, &sqlite3_close);
  if (rc != SQLITE_OK) throw std::runtime_error("cannot open " + file + ": " + sqlite3_errstr(rc));
  sqlite3_busy_timeout(raw, static_cast<int>(busy_timeout.count()));
  return db;
}

}  // namespace dlock::testing

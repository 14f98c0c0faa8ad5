// A gtest fixture for the dlock::mariadb tests: one MariaDB server per suite (started on a free
// loopback port by dlock::testing::MariaDbServer, stopped by PID), a Connector/C connection per
// test, and the fence schema installed with no token recorded.
#pragma once

#include <gtest/gtest.h>
#include <mysql.h>

#include <memory>
#include <string>

#include "dlock/mariadb/fence.hpp"
#include "dlock/testing/mariadb.hpp"
#include "mariadb/mariadb_connect.hpp"

namespace dlock::testing {

class MariaDbSuite : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = new MariaDbServer(); }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    conn_ = std::make_unique<MariaDbConnectionPtr>(connect_mariadb(server_->connect_options()));
    mariadb::install_schema(conn());
    server_->execute("DELETE FROM dlock_fence");
  }
  MYSQL* conn() { return conn_->get(); }
  static MariaDbServer& server() { return *server_; }
  // The first column of the first row of `sql`, on a connection of its own (what another client
  // sees: only what was committed).
  static std::int64_t committed(const std::string& sql) { return server_->query_int(sql); }

 private:
  static inline MariaDbServer* server_ = nullptr;
  std::unique_ptr<MariaDbConnectionPtr> conn_;
};

}  // namespace dlock::testing

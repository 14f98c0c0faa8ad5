// A gtest fixture for the dlock::postgres tests: one PostgreSQL server per suite (started on a
// free loopback port by dlock::testing::PostgresServer, stopped by PID), a libpq connection per
// test, and the fence schema installed with no token recorded.
#pragma once

#include <gtest/gtest.h>
#include <libpq-fe.h>

#include <memory>
#include <stdexcept>
#include <string>

#include "dlock/postgres/fence.hpp"
#include "dlock/testing/postgres.hpp"
#include "postgres/pg_connect.hpp"

namespace dlock::testing {

class PostgresSuite : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = new PostgresServer(); }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    conn_ = std::make_unique<PgConnectionPtr>(pg_connect(server_->conninfo()));
    postgres::install_schema(conn());
    server_->execute("TRUNCATE dlock_fence");
  }
  PGconn* conn() { return conn_->get(); }
  static PostgresServer& server() { return *server_; }
  // The first column of the first row of `sql`, on a connection of its own (what another client
  // sees: only what was committed).
  static std::int64_t committed(const std::string& sql) { return server_->query_int(sql); }

 private:
  static inline PostgresServer* server_ = nullptr;
  std::unique_ptr<PgConnectionPtr> conn_;
};

}  // namespace dlock::testing

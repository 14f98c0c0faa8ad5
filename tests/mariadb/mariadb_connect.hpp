// A MariaDB Connector/C connection for the dlock::mariadb tests and their helper processes, from
// the options string of dlock::testing::MariaDbServer::connect_options() ("host=... port=...
// user=... database=...").
#pragma once

#include <mysql.h>

#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>

namespace dlock::testing {

using MariaDbConnectionPtr = std::unique_ptr<MYSQL, decltype(&mysql_close)>;

// Connects; throws std::runtime_error with the client library's message.
inline MariaDbConnectionPtr connect_mariadb(const std::string& options) {
  std::string host, user, database;
  unsigned port = 0;
  std::istringstream words(options);
  for (std::string word; words >> word;) {
    const auto eq = word.find('=');
    const std::string key = word.substr(0, eq), value = eq == std::string::npos ? "" : word.substr(eq + 1);
    if (key == "host") host = value;
    if (key == "port") port = static_cast<unsigned>(std::stoul(value));
    if (key == "user") user = value;
    if (key == "database") database = value;
  }
  MariaDbConnectionPtr conn(mysql_init(nullptr), &mysql_close);
  if (!conn) throw std::runtime_error("mysql_init: out of memory");
  if (mysql_real_connect(conn.get(), host.c_str(), user.c_str(), "", database.c_str(), port, nullptr, 0) == nullptr) {
    throw std::runtime_error(std::string("connecting to MariaDB (") + options + "): " + mysql_error(conn.get()));
  }
  return conn;
}

}  // namespace dlock::testing

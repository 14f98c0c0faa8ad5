// The HTTP API: POST /login and GET /health, in JSON; GET /metrics, dlock's metrics as Prometheus text. Opens the
// transaction around the login handler and commits it after the handler returned, as a framework's @Transactional
// would.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <exception>
#include <optional>
#include <string>

#include "commit_gate.hpp"
#include "db.hpp"
#include "dlock/metrics_registry.hpp"
#include "dlock/session.hpp"
#include "http_server.hpp"
#include "login_handler.hpp"

namespace account_service {

// Each worker thread owns one PostgreSQL connection and names it here (for its lifetime) before
// it serves requests; a request's handler runs on a worker thread and uses that thread's
// connection, so no two requests ever share one.
class WorkerDatabase {
 public:
  explicit WorkerDatabase(PgConnection& db) noexcept;
  ~WorkerDatabase();
  WorkerDatabase(const WorkerDatabase&) = delete;
  WorkerDatabase& operator=(const WorkerDatabase&) = delete;
  // The calling worker thread's connection; throws std::logic_error on any other thread.
  static PgConnection& current();
};

struct RoutesOptions {
  std::string instance;
  LockRelease lock_release = LockRelease::after_commit;
  std::chrono::milliseconds delay_before_commit{0};
  const CommitGate* commit_gate = nullptr;  // debug: holds logins before COMMIT (commit_gate.hpp)
  // For handle_async: where the database work runs (threads that are WorkerDatabase workers).
  std::optional<boost::asio::any_io_executor> database;
};

class Routes {
 public:
  // `metrics` is the session's sink (SessionOptions::metrics), served at GET /metrics.
  Routes(const dlock::Session& session, const dlock::MetricsRegistry& metrics, const LoginHandler& login,
         RoutesOptions options)
      : session_(session), metrics_(metrics), login_(login), options_(std::move(options)) {}

  // Never throws: every failure is an error response (and a line on stderr for 5xx).
  HttpResponse handle(const HttpRequest& request) const;
  // The same as a coroutine that never blocks its thread: POST /login waits for its lock with
  // DLOCK_CO_SCOPE and runs its transaction on RoutesOptions::database; the other routes are
  // served there too (they may touch the database).
  boost::asio::awaitable<HttpResponse> handle_async(HttpRequest request) const;

 private:
  HttpResponse login(const HttpRequest& request) const;
  boost::asio::awaitable<HttpResponse> login_async(const HttpRequest& request) const;
  // The login's answer under its lock: the transaction `tx`'s checks, delay and commit, and the
  // JSON of `result`.
  HttpResponse commit_login(const HttpRequest& request, PgTransaction& tx, const LoginResult& result) const;
  // The answer to a login that failed with `error` (a 503 to retry, or a 500).
  HttpResponse login_failure(const HttpRequest& request, std::int64_t uid, std::exception_ptr error) const;
  HttpResponse health(const HttpRequest& request) const;
  HttpResponse metrics(const HttpRequest& request) const;
  const dlock::Session& session_;
  const dlock::MetricsRegistry& metrics_;
  const LoginHandler& login_;
  RoutesOptions options_;
};

}  // namespace account_service

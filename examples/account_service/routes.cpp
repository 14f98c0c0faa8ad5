#include "routes.hpp"

#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <thread>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "db.hpp"
#include "dlock/async.hpp"
#include "dlock/error.hpp"

namespace account_service {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using nlohmann::json;

namespace {

thread_local PgConnection* worker_db = nullptr;

HttpResponse error_response(const HttpRequest& request, http::status status, const std::string& message) {
  return json_response(request, status, json{{"error", message}}.dump());
}

// The request body's uid, or an error message for the client.
std::optional<LoginRequest> parse_login(const std::string& body, std::string& error) {
  const json document = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded() || !document.is_object()) {
    error = R"(expected a JSON object such as {"uid": 42})";
    return std::nullopt;
  }
  const auto uid = document.find("uid");
  if (uid == document.end() || !uid->is_number_integer() ||
      (uid->is_number_unsigned() && uid->get<std::uint64_t>() > std::numeric_limits<std::int64_t>::max())) {
    error = "\"uid\" must be an integer (int64)";
    return std::nullopt;
  }
  return LoginRequest{.uid = uid->get<std::int64_t>()};
}

}  // namespace

WorkerDatabase::WorkerDatabase(PgConnection& db) noexcept { worker_db = &db; }
WorkerDatabase::~WorkerDatabase() { worker_db = nullptr; }
PgConnection& WorkerDatabase::current() {
  if (!worker_db) throw std::logic_error("no database connection on this thread (not a worker thread)");
  return *worker_db;
}

HttpResponse Routes::handle(const HttpRequest& request) const {
  const std::string_view target = request.target();
  if (target == "/login") {
    if (request.method() != http::verb::post) {
      return error_response(request, http::status::method_not_allowed, "use POST");
    }
    return login(request);
  }
  if (target == "/health") {
    if (request.method() != http::verb::get) {
      return error_response(request, http::status::method_not_allowed, "use GET");
    }
    return health(request);
  }
  if (target == "/metrics") {
    if (request.method() != http::verb::get) {
      return error_response(request, http::status::method_not_allowed, "use GET");
    }
    return metrics(request);
  }
  return error_response(request, http::status::not_found, "no such resource: POST /login, GET /health, GET /metrics");
}

namespace {

// 503 with Retry-After: nothing was written, and the same request may succeed in a moment.
HttpResponse retry_later(const HttpRequest& request, const std::string& why) {
  auto response = error_response(request, http::status::service_unavailable, why);
  response.set(http::field::retry_after, "1");
  return response;
}

}  // namespace

HttpResponse Routes::login(const HttpRequest& request) const {
  std::string error;
  const auto req = parse_login(request.body(), error);
  if (!req) return error_response(request, http::status::bad_request, error);
  try {
    // @Transactional, by hand: the transaction is the caller's, opened before the handler and
    // committed after it returned. A bound lock is released by tx.commit(); an unbound one was
    // released already when login() returned.
    PgTransaction tx(WorkerDatabase::current());
    const LoginResult result = login_.login(*req, tx);
    return commit_login(request, tx, result);
  } catch (...) {
    return login_failure(request, *req->uid, std::current_exception());
  }
}

asio::awaitable<HttpResponse> Routes::handle_async(HttpRequest request) const {
  if (request.target() == "/login" && request.method() == http::verb::post) co_return co_await login_async(request);
  // Everything else as the synchronous routes do, on a database worker (GET /health asks it).
  co_return co_await asio::co_spawn(
      *options_.database, [&]() -> asio::awaitable<HttpResponse> { co_return handle(request); }, asio::use_awaitable);
}

asio::awaitable<HttpResponse> Routes::login_async(const HttpRequest& request) const {
  std::string error;
  const auto req = parse_login(request.body(), error);
  if (!req) co_return error_response(request, http::status::bad_request, error);
  std::exception_ptr failure;
  try {
    // The holder of this request's guards: asking again for its own uid would be WouldDeadlock.
    const auto locks = login_.locks().holder();
    // Waits for the uid's lock without a thread: the I/O thread serves other requests meanwhile.
    DLOCK_CO_SCOPE_AS(lock, locks, "login", *req);
    // The transaction runs on a database worker (it blocks on PostgreSQL), and is committed there
    // before this coroutine resumes: the guard is released at the end of this scope, after the
    // commit, as a bound guard would be.
    co_return co_await asio::co_spawn(
        *options_.database,
        [&]() -> asio::awaitable<HttpResponse> {
          PgTransaction tx(WorkerDatabase::current());
          const LoginResult result = login_.login_locked(*req, tx, lock);
          co_return commit_login(request, tx, result);
        },
        asio::use_awaitable);
  } catch (...) {
    failure = std::current_exception();  // answered below: a catch block cannot co_await
  }
  co_return login_failure(request, *req->uid, failure);
}

HttpResponse Routes::commit_login(const HttpRequest& request, PgTransaction& tx, const LoginResult& result) const {
  // A lock that stopped being trusted meanwhile (see LoginResult::lock_lost) may be another
  // instance's by now: what was decided under it must not be committed.
  if (result.lock_lost.stop_requested()) {
    tx.rollback();
    return retry_later(request, "the lock on this uid was lost before the commit; nothing was written, retry");
  }
  // Debug: holds, or widens, the window between that check and COMMIT, where a stall past the
  // session (or, with the lock released before the commit, the next holder) goes unseen by the
  // check. Only the database's fence covers it (login_handler.cpp).
  if (options_.commit_gate) options_.commit_gate->pass();
  if (options_.delay_before_commit.count() > 0) std::this_thread::sleep_for(options_.delay_before_commit);
  tx.commit();
  json body{{"uid", result.uid},
            {"user_id", result.user_id},
            {"account_id", result.account_id},
            {"created", result.created},
            {"instance", options_.instance},
            {"fencing_token", nullptr},
            {"lock_release", std::string(to_string(options_.lock_release))}};
  if (result.fencing_token) body["fencing_token"] = *result.fencing_token;
  return json_response(request, http::status::ok, body.dump());
}

HttpResponse Routes::login_failure(const HttpRequest& request, std::int64_t uid, std::exception_ptr error) const {
  try {
    std::rethrow_exception(error);
  } catch (const dlock::StaleFencingToken& e) {
    // This instance stalled while holding the lock and another took it over.
    return retry_later(request, e.what());
  } catch (const dlock::LockTimeout& e) {
    // Another login of this uid holds the lock for too long.
    return retry_later(request, e.what());
  } catch (const dlock::LockLost& e) {
    // The lock, or the session it needed, was lost (a connection drop, an expiry): nothing was
    // written, and the session renews itself.
    return retry_later(request, e.what());
  } catch (const boost::system::system_error& e) {
    // An asynchronous lock's error (DLOCK_CO_SCOPE throws its code): a timeout or a lost lock is
    // worth a retry, as above; anything else is a failure.
    const auto code = e.code();
    if (code == dlock::make_error_code(dlock::errc::lock_timeout) ||
        code == dlock::make_error_code(dlock::errc::disconnected) ||
        code == dlock::make_error_code(dlock::errc::lock_lost) || code.category() == dlock::zookeeper_category()) {
      return retry_later(request, e.what());
    }
    std::cerr << "account_service[" << options_.instance << "]: login of uid " << uid << " failed: " << e.what()
              << std::endl;
    return error_response(request, http::status::internal_server_error, e.what());
  } catch (const std::exception& e) {
    // The fence waited out its lock_timeout behind a stalled older holder (SQLSTATE 55P03,
    // lock_not_available): like a lock timeout.
    if (const auto* pg = dynamic_cast<const DatabaseError*>(&e); pg != nullptr && pg->sqlstate() == "55P03") {
      return retry_later(request, e.what());
    }
    // DatabaseError, dlock::Error, ...: the transaction rolled back (its destructor ran) and its
    // locks are released.
    std::cerr << "account_service[" << options_.instance << "]: login of uid " << uid << " failed: " << e.what()
              << std::endl;
    return error_response(request, http::status::internal_server_error, e.what());
  }
}

HttpResponse Routes::health(const HttpRequest& request) const {
  const auto zk = session_.state();
  std::string database = "ok";
  try {
    PgConnection& db = WorkerDatabase::current();
    db.ensure_connected();
    db.exec("SELECT 1");
  } catch (const std::exception& e) {
    database = e.what();
  }
  const bool ok = zk == dlock::SessionState::Connected && database == "ok";
  const json body{{"status", ok ? "ok" : "unavailable"},
                  {"instance", options_.instance},
                  {"zookeeper", std::string(dlock::to_string(zk))},
                  {"database", database},
                  {"lock_release", std::string(to_string(options_.lock_release))}};
  return json_response(request, ok ? http::status::ok : http::status::service_unavailable, body.dump());
}

}  // namespace account_service

namespace account_service {

// What Prometheus scrapes: lock acquisitions, waits and holds of the "login" and "schema" lock
// families (their DLOCK_SCOPE namespaces), the session's state and requests.
HttpResponse Routes::metrics(const HttpRequest& request) const {
  HttpResponse response(http::status::ok, request.version());
  response.set(http::field::server, "dlock-account-service");
  response.set(http::field::content_type, dlock::MetricsRegistry::kPrometheusContentType);
  response.keep_alive(request.keep_alive());
  response.body() = metrics_.prometheus_text();
  response.prepare_payload();
  return response;
}

}  // namespace account_service

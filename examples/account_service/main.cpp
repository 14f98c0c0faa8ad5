// account_service: the example service of the "duplicate accounts on concurrent first login"
// story. Several instances share one ZooKeeper (for dlock) and one PostgreSQL database; see
// README.md in this directory.
//
// One dlock::Session per process, shared by every lock; a fixed pool of worker threads runs the
// HTTP server, each thread with its own PostgreSQL connection.
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <thread>
#include <vector>

#include "account_store.hpp"
#include "config.hpp"
#include "db.hpp"
#include "dlock/metrics_registry.hpp"
#include "dlock/postgres/fence.hpp"
#include "dlock/scope.hpp"
#include "dlock/session.hpp"
#include "http_server.hpp"
#include "login_handler.hpp"
#include "routes.hpp"

namespace asio = boost::asio;
using namespace account_service;

namespace {

std::string default_instance(unsigned short port) {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) std::snprintf(host, sizeof host, "localhost");
  return std::string(host) + ":" + std::to_string(port);
}

// Instances starting together would race on CREATE TABLE IF NOT EXISTS (both find the table
// missing, one fails on a catalog index). The cure is the one the login handler uses: a lock
// released only after the transaction that creates the tables has committed.
void create_schema(PgConnection& db, const dlock::LockService& locks) {
  // dlock_fence, which the login's bound lock fences in (its own transaction, serialized by an
  // advisory lock: safe with every instance starting at once).
  dlock::postgres::install_schema(db.native());
  PgTransaction tx(db);
  DLOCK_SCOPE(locks.bound_to(tx), "schema", "account_service");
  store::create_schema(tx);
  tx.commit();
}

int run(const Config& config) {
  // Lock metrics for GET /metrics; the families are the DLOCK_SCOPE namespaces ("login", "schema").
  const auto metrics = std::make_shared<dlock::MetricsRegistry>();
  dlock::Session session(
      {.connect = config.zk, .session_timeout = config.session_timeout, .metrics = {.sink = metrics}});
  const dlock::LockService locks(session, config.lock_base, config.lock_timeout);

  // Every connection is opened before serving, so a wrong --db fails the start, not a request.
  std::vector<PgConnection> connections;
  for (int i = 0; i < config.threads; ++i) connections.emplace_back(config.db);
  create_schema(connections.front(), locks);

  // Synchronous handlers: the workers run the HTTP io_context itself. Asynchronous: one I/O thread
  // runs it, and the workers run only the database's (`database`).
  asio::io_context ioc(config.async_handler ? 1 : config.threads);
  asio::io_context database(config.threads);
  auto database_work = asio::make_work_guard(database);
  asio::io_context& worker_context = config.async_handler ? database : ioc;
  HttpServer server(ioc, config.bind, config.port);
  const std::string instance = config.instance.empty() ? default_instance(server.port()) : config.instance;
  const LoginHandler login(locks, config.lock_release, instance, config.fencing, config.lock_timeout);
  const CommitGate commit_gate(config.hold_before_commit);
  RoutesOptions routes_options{.instance = instance,
                               .lock_release = config.lock_release,
                               .delay_before_commit = config.delay_before_commit,
                               .commit_gate = &commit_gate,
                               .database = std::nullopt};
  if (config.async_handler) routes_options.database = database.get_executor();
  const Routes routes(session, *metrics, login, std::move(routes_options));

  // SIGINT / SIGTERM stop the service; running handlers finish their transactions first.
  asio::signal_set signals(ioc, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code& ec, int) {
    if (ec) return;
    server.stop();
    ioc.stop();
    database_work.reset();
    database.stop();
  });
  // The session outlives connection losses and, by dlock's default, its own expiry (a new session
  // replaces it). Locks held across such a loss are signalled (LoginResult::lock_lost) and their
  // transactions roll back; the log shows when it happened.
  auto subscription = session.subscribe([&instance](dlock::SessionState state) {
    std::cerr << "account_service[" << instance << "]: ZooKeeper session " << dlock::to_string(state) << std::endl;
  });

  if (config.async_handler) {
    server.start_async([&routes](HttpRequest request) { return routes.handle_async(std::move(request)); });
  } else {
    server.start([&routes](const HttpRequest& request) { return routes.handle(request); });
  }
  std::vector<std::jthread> workers;
  if (config.async_handler) {
    workers.emplace_back([&ioc, &instance] {
      for (;;) {
        try {
          ioc.run();
          return;
        } catch (const std::exception& e) {  // handlers catch their own; keep serving regardless
          std::cerr << "account_service[" << instance << "]: I/O thread: " << e.what() << std::endl;
        }
      }
    });
  }
  for (auto& db : connections) {
    workers.emplace_back([&worker_context, &db, &instance] {
      const WorkerDatabase bind(db);
      for (;;) {
        try {
          worker_context.run();
          return;
        } catch (const std::exception& e) {  // handlers catch their own; keep serving regardless
          std::cerr << "account_service[" << instance << "]: worker: " << e.what() << std::endl;
        }
      }
    });
  }
  std::cerr << "account_service[" << instance << "]: serving on " << config.bind << ":" << server.port() << " with "
            << config.threads << " workers (" << (config.async_handler ? "async" : "sync") << " handler), lock release "
            << to_string(config.lock_release) << ", locks under " << config.lock_base << std::endl;
  std::printf("LISTENING %u\n", static_cast<unsigned>(server.port()));
  std::fflush(stdout);

  for (auto& worker : workers) worker.join();
  subscription.reset();
  std::cerr << "account_service[" << instance << "]: stopped" << std::endl;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    bool help = false;
    const Config config = parse_config(argc, argv, help);
    if (help) {
      std::cout << usage();
      return 0;
    }
    return run(config);
  } catch (const std::exception& e) {
    std::cerr << "account_service: " << e.what() << std::endl;
    return 2;
  }
}

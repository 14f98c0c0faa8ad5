#include "config.hpp"

#include <charconv>
#include <cstdlib>
#include <functional>
#include <map>
#include <stdexcept>

namespace account_service {

std::string_view to_string(LockRelease mode) noexcept {
  switch (mode) {
    case LockRelease::after_commit:
      return "after-commit";
    case LockRelease::before_commit:
      return "before-commit";
    case LockRelease::none:
      return "none";
  }
  return "?";
}

std::optional<LockRelease> parse_lock_release(std::string_view text) noexcept {
  for (auto mode : {LockRelease::after_commit, LockRelease::before_commit, LockRelease::none}) {
    if (text == to_string(mode)) return mode;
  }
  return std::nullopt;
}

namespace {

long long parse_integer(std::string_view where, std::string_view text, long long min, long long max) {
  long long value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < min || value > max) {
    throw std::invalid_argument(std::string(where) + ": expected an integer in [" + std::to_string(min) + ", " +
                                std::to_string(max) + "], got \"" + std::string(text) + "\"");
  }
  return value;
}

// One option: its flag, its environment variable, and how it sets the config.
struct Option {
  const char* flag;
  const char* env;
  std::function<void(Config&, std::string_view where, std::string_view value)> set;
};

const std::vector<Option>& options() {
  static const std::vector<Option> all{
      {"--bind", "BIND", [](Config& c, auto, auto v) { c.bind = v; }},
      {"--port", "PORT",
       [](Config& c, auto w, auto v) { c.port = static_cast<unsigned short>(parse_integer(w, v, 0, 65535)); }},
      {"--zk", "DLOCK_ZK", [](Config& c, auto, auto v) { c.zk = v; }},
      {"--db", "DATABASE_URL", [](Config& c, auto, auto v) { c.db = v; }},
      {"--instance", "INSTANCE", [](Config& c, auto, auto v) { c.instance = v; }},
      {"--lock-base", "DLOCK_LOCK_BASE", [](Config& c, auto, auto v) { c.lock_base = v; }},
      {"--lock-release", "LOCK_RELEASE",
       [](Config& c, auto w, auto v) {
         const auto mode = parse_lock_release(v);
         if (!mode) {
           throw std::invalid_argument(std::string(w) + ": expected after-commit, before-commit or none, got \"" +
                                       std::string(v) + "\"");
         }
         c.lock_release = *mode;
       }},
      {"--lock-timeout-ms", "LOCK_TIMEOUT_MS",
       [](Config& c, auto w, auto v) { c.lock_timeout = std::chrono::milliseconds(parse_integer(w, v, 1, 3600000)); }},
      {"--delay-before-commit-ms", "DELAY_BEFORE_COMMIT_MS",
       [](Config& c, auto w, auto v) {
         c.delay_before_commit = std::chrono::milliseconds(parse_integer(w, v, 0, 60000));
       }},
      {"--hold-before-commit", "HOLD_BEFORE_COMMIT",
       [](Config& c, auto w, auto v) { c.hold_before_commit = static_cast<int>(parse_integer(w, v, 0, 1000)); }},
      {"--fencing", "FENCING",
       [](Config& c, auto w, auto v) {
         if (v != "on" && v != "off") {
           throw std::invalid_argument(std::string(w) + ": expected on or off, got \"" + std::string(v) + "\"");
         }
         c.fencing = v == "on";
       }},
      {"--session-timeout-ms", "DLOCK_SESSION_TIMEOUT_MS",
       [](Config& c, auto w, auto v) {
         c.session_timeout = std::chrono::milliseconds(parse_integer(w, v, 1000, 600000));
       }},
      {"--threads", "WORKER_THREADS",
       [](Config& c, auto w, auto v) { c.threads = static_cast<int>(parse_integer(w, v, 1, 256)); }},
      {"--handler", "HANDLER",
       [](Config& c, auto w, auto v) {
         if (v != "sync" && v != "async") {
           throw std::invalid_argument(std::string(w) + ": expected sync or async, got \"" + std::string(v) + "\"");
         }
         c.async_handler = v == "async";
       }},
  };
  return all;
}

}  // namespace

Config parse_config(int argc, char** argv, bool& help) {
  Config config;
  help = false;
  for (const auto& option : options()) {
    if (const char* value = std::getenv(option.env)) {
      option.set(config, std::string("environment variable ") + option.env, value);
    }
  }
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      help = true;
      return config;
    }
    // "--flag value" and "--flag=value" are both accepted.
    std::string_view name = arg;
    std::optional<std::string_view> value;
    if (const auto eq = arg.find('='); eq != std::string_view::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
    }
    const Option* option = nullptr;
    for (const auto& candidate : options()) {
      if (name == candidate.flag) option = &candidate;
    }
    if (!option) throw std::invalid_argument("unknown option \"" + std::string(arg) + "\" (try --help)");
    if (!value) {
      if (i + 1 >= argc) throw std::invalid_argument(std::string(name) + " needs a value");
      value = argv[++i];
    }
    option->set(config, name, *value);
  }
  if (config.async_handler && config.lock_release != LockRelease::after_commit) {
    // The coroutine's guard is released when its scope ends, after the commit it awaited: the
    // other modes (which exist to show the bug) have no asynchronous form.
    throw std::invalid_argument("--handler async needs --lock-release after-commit, got " +
                                std::string(to_string(config.lock_release)));
  }
  return config;
}

std::string usage() {
  return R"(account_service: POST /login {"uid": N} creates the user and app account of uid N once.

Options (each also read from the environment variable in brackets; a flag wins):
  --bind ADDR                  [BIND]            listen address (default 0.0.0.0)
  --port N                     [PORT]            HTTP port, 0 = any free port (default 8080)
  --zk HOSTS                   [DLOCK_ZK]        ZooKeeper connect string (default 127.0.0.1:2181)
  --db CONNINFO                [DATABASE_URL]    libpq conninfo (default: libpq's defaults)
  --instance NAME              [INSTANCE]        name in responses (default <hostname>:<port>)
  --lock-base PATH             [DLOCK_LOCK_BASE] ZooKeeper path of the locks (default /locks/account_service)
  --lock-release MODE          [LOCK_RELEASE]    after-commit (default), before-commit or none
  --lock-timeout-ms N          [LOCK_TIMEOUT_MS] longest wait for a lock, then 503 (default 10000)
  --delay-before-commit-ms N   [DELAY_BEFORE_COMMIT_MS] debug: sleep right before COMMIT (default 0)
  --hold-before-commit N       [HOLD_BEFORE_COMMIT] debug: the first N logins wait right before COMMIT
                                                 until a line (or the end) of stdin (default 0)
  --fencing on|off             [FENCING]         after-commit: fence writes with the lock's token (default on)
  --session-timeout-ms N       [DLOCK_SESSION_TIMEOUT_MS] ZooKeeper session timeout (default 10000)
  --threads N                  [WORKER_THREADS]  worker threads, one database connection each (default 8)
  --handler sync|async         [HANDLER]         sync (default): a worker runs each request, blocking on
                                                 the lock; async: POST /login is a coroutine on one I/O
                                                 thread that waits for its lock without a thread
                                                 (DLOCK_CO_SCOPE); the workers run only its
                                                 database work (needs --lock-release after-commit)

Prints "LISTENING <port>" on stdout once it serves. SIGINT/SIGTERM stop it.
)";
}

}  // namespace account_service

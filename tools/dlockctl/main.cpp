// dlockctl: who holds a lock and who waits for it, across dlock, Curator and kazoo clients
// (docs/OPERATIONS.md). The command line, its checks and the exit codes; the commands are in
// commands.cpp, their output in output.cpp.
#include <CLI/CLI.hpp>

#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "commands.hpp"
#include "dlock/error.hpp"
#include "dlock/session.hpp"
#include "output.hpp"

namespace {

using dlockctl::CommandError;
using dlockctl::ExitCode;

// "--auth SCHEME:SECRET" as Credentials; the secret is never echoed back.
dlock::Credentials parse_auth(const std::string& value) {
  const auto colon = value.find(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == value.size()) {
    throw CommandError(
        dlockctl::kUsage,
        "--auth must be SCHEME:SECRET with both parts non-empty (e.g. digest:user:password); got a value "
        "of " +
            std::to_string(value.size()) + " bytes " +
            (colon == std::string::npos ? "without ':'" : "with an empty part") +
            " (not shown: it may hold a password)");
  }
  return {.scheme = value.substr(0, colon), .secret = value.substr(colon + 1)};
}

// A lock path as Mutex takes it (InvalidPath names the path and the rule).
void check_path(const char* what, const std::string& path) {
  try {
    dlock::check_lock_path(path);
  } catch (const dlock::InvalidPath& e) {
    throw CommandError(dlockctl::kUsage, std::string(what) + ": " + e.what());
  }
}

// A base for `list`: a lock path, or "/" for everything.
void check_base(const std::string& base) {
  if (base != "/") check_path("list BASE", base);
}

int fail(bool json, int code, const std::string& message) {
  std::cerr << "dlockctl: " << message << "\n";
  // One line: also a valid JSON Lines entry after watch's updates.
  if (json) std::cout << nlohmann::ordered_json{{"error", message}, {"exit_code", code}}.dump() << "\n";
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "dlockctl: who holds a lock and who waits for it, across dlock, Apache Curator and kazoo clients.\n"
      "Lock paths are lock directories, as a dlock::Mutex or Curator's InterProcessMutex names them."};
  app.footer(dlockctl::kExitCodesHelp);
  app.require_subcommand(1);
  // Global options may also follow the command ("dlockctl show /x --auth ..."): otherwise CLI11
  // reports them as unexpected arguments, secret included.
  app.fallthrough();

  std::string connect;
  std::vector<std::string> auth;
  bool json = false;
  std::int64_t connect_timeout_ms = 10'000;
  app.add_option("--connect", connect, "ZooKeeper connect string HOST:PORT[,HOST:PORT...][/chroot]")->required();
  app.add_option("--auth", auth, "credentials SCHEME:SECRET (e.g. digest:user:password), repeatable")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_flag("--json", json, "print one JSON document on stdout (errors too, as {\"error\", \"exit_code\"})");
  app.add_option("--connect-timeout-ms", connect_timeout_ms, "give up connecting after this long (default 10000)");

  std::string base;
  auto* list = app.add_subcommand("list",
                                  "lock directories under BASE (recursively) that have contenders: "
                                  "path, queue length, holder(s)");
  list->add_option("BASE", base, "where to look, e.g. /locks (\"/\" for everything)")->required();

  std::string path;
  auto* show = app.add_subcommand("show",
                                  "the queue of PATH in order: client (dlock, curator, kazoo), kind, "
                                  "host, pid, thread, since, session id, fencing token, holds");
  show->add_option("PATH", path, "the lock directory, e.g. /locks/orders/42")->required();

  std::optional<std::int64_t> timeout_ms;
  auto* wait = app.add_subcommand("wait",
                                  "block until no contender is queued on PATH (exit 0), or until "
                                  "--timeout-ms (exit 1)");
  wait->add_option("PATH", path, "the lock directory")->required();
  wait->add_option("--timeout-ms", timeout_ms, "give up after this many milliseconds (default: no limit)");

  std::optional<std::int64_t> updates;
  auto* watch = app.add_subcommand("watch",
                                   "print the queue of PATH now and again each time it changes "
                                   "(--json: one JSON document per line), until Ctrl-C, --timeout-ms "
                                   "or --updates");
  watch->add_option("PATH", path, "the lock directory")->required();
  watch->add_option("--timeout-ms", timeout_ms, "stop after this many milliseconds (default: no limit)");
  watch->add_option("--updates", updates,
                    "stop after printing this many updates, the first included (default: no limit)");

  std::string node;
  bool force = false;
  bool yes = false;
  auto* release =
      app.add_subcommand("release",
                         "delete another client's lock node (a dead holder's), with --force and --yes. Only fencing "
                         "protects the resource if that holder is still alive");
  release->add_option("PATH", path, "the lock directory")->required();
  release->add_option("NODE", node, "the node's name as `dlockctl show` prints it")->required();
  release->add_flag("--force", force, "required: this deletes a node this tool does not own");
  release->add_flag("--yes", yes, "required: confirms the deletion");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ExtrasError&) {
    // CLI11 would list the unexpected arguments: one of them may be a password.
    return fail(json, dlockctl::kUsage,
                "unexpected arguments after the command (not shown: they may hold a password); see dlockctl --help");
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    return fail(json, dlockctl::kUsage, e.what());
  }

  try {
    if (connect_timeout_ms <= 0) {
      throw CommandError(dlockctl::kUsage,
                         "--connect-timeout-ms must be positive, got " + std::to_string(connect_timeout_ms));
    }
    // Far beyond any script's wait, and far from overflowing a steady_clock deadline.
    constexpr std::int64_t kMaxTimeoutMs = 366LL * 24 * 3600 * 1000;
    if (timeout_ms && *timeout_ms > kMaxTimeoutMs) {
      throw CommandError(dlockctl::kUsage, "--timeout-ms must be at most " + std::to_string(kMaxTimeoutMs) +
                                               " (a year), got " + std::to_string(*timeout_ms));
    }
    if (connect_timeout_ms > kMaxTimeoutMs) {
      throw CommandError(dlockctl::kUsage, "--connect-timeout-ms must be at most " + std::to_string(kMaxTimeoutMs) +
                                               " (a year), got " + std::to_string(connect_timeout_ms));
    }
    if (timeout_ms && *timeout_ms < 0) {
      throw CommandError(dlockctl::kUsage, std::string(watch->parsed() ? "watch" : "wait") +
                                               " --timeout-ms must be 0 or more, got " + std::to_string(*timeout_ms));
    }
    if (updates && *updates < 1) {
      throw CommandError(dlockctl::kUsage, "watch --updates must be 1 or more, got " + std::to_string(*updates));
    }
    if (list->parsed()) check_base(base);
    if (show->parsed() || wait->parsed() || watch->parsed() || release->parsed()) check_path("PATH", path);
    if (release->parsed()) {
      std::cerr << dlockctl::kReleaseWarning;
      if (node.empty() || node.find('/') != std::string::npos || !dlock::is_contender_name(node)) {
        throw CommandError(dlockctl::kUsage, "release NODE \"" + dlock::escape_text(node) +
                                                 "\" is not a lock contender's name (one child of PATH, e.g. "
                                                 "_c_<uuid>-lock-0000000003 or <hex>__lock__0000000003)");
      }
      if (!force || !yes) {
        throw CommandError(dlockctl::kUsage, std::string("release refused: ") + (!force ? "--force" : "") +
                                                 (!force && !yes ? " and " : "") + (!yes ? "--yes" : "") +
                                                 " missing; nothing deleted");
      }
    }
    std::vector<dlock::Credentials> credentials;
    for (const auto& a : auth) credentials.push_back(parse_auth(a));

    dlock::SessionOptions options{.connect = connect,
                                  .connect_timeout = std::chrono::milliseconds(connect_timeout_ms),
                                  .renew_expired_session = false,
                                  .auth = std::move(credentials)};
    dlock::Session session(std::move(options));
    if (list->parsed()) return dlockctl::list_locks(session, base, json);
    if (show->parsed()) return dlockctl::show_lock(session, path, json);
    if (wait->parsed()) return dlockctl::wait_free(session, path, timeout_ms, json);
    if (watch->parsed()) return dlockctl::watch_lock(session, path, timeout_ms, updates, json);
    return dlockctl::force_release(session, path, node, json);
  } catch (const CommandError& e) {
    return fail(json, e.code(), e.what());
  } catch (const dlock::ConnectError& e) {
    return fail(json, dlockctl::kZooKeeper, std::string("--connect: ") + e.what());
  } catch (const dlock::InvalidPath& e) {
    return fail(json, dlockctl::kUsage, e.what());
  } catch (const dlock::Error& e) {
    return fail(json, dlockctl::kZooKeeper, e.what());
  } catch (const std::exception& e) {
    return fail(json, dlockctl::kZooKeeper, e.what());
  }
}

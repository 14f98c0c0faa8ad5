// dlockctl: who holds a lock and who waits for it, across dlock, Curator and kazoo clients, and
// running a command under a lock, semaphore leases or a leadership term (docs/OPERATIONS.md). The
// command line, its checks and the exit codes; the inspection commands (and revoke) are in
// commands.cpp, their output in output.cpp; lock and read-lock take their hold in lock_hold.cpp,
// semaphore and elect in recipe_holds.cpp, and all four run the command under it in run_under.cpp.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <charconv>
#include <climits>
#include <exception>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "any_stop.hpp"
#include "commands.hpp"
#include "dlock/error.hpp"
#include "dlock/revocation.hpp"
#include "dlock/session.hpp"
#include "dlock/version.hpp"
#include "durations.hpp"
#include "hold_open.hpp"
#include "lock_hold.hpp"
#include "output.hpp"
#include "recipe_holds.hpp"
#include "run_once.hpp"
#include "run_under.hpp"
#include "signals.hpp"
#include "spawn.hpp"
#include "wait_report.hpp"
#include "waits.hpp"

namespace {

using dlockctl::CommandError;
using dlockctl::duration_in;
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

// Far beyond any script's wait, and far from overflowing a steady_clock deadline.
constexpr std::int64_t kMaxTimeoutMs = 366LL * 24 * 3600 * 1000;

// A whole number in [min, max], checked before CLI11 converts it, so that garbage gets the rule
// too ("--kill-after-ms: must be ..., got \"soon\""). `unit` names it in the usage ("MS", "N").
CLI::Validator whole_number_in(std::int64_t min, std::int64_t max, const std::string& rule, const std::string& unit) {
  return CLI::Validator(
      [=](std::string& value) -> std::string {
        std::int64_t ms = 0;
        const auto* end = value.data() + value.size();
        const auto [stop, ec] = std::from_chars(value.data(), end, ms);
        if (ec == std::errc() && stop == end && ms >= min && ms <= max) return {};
        return "must be " + rule + ", got \"" + dlock::escape_text(value, 40) + "\"";
      },
      unit);
}

CLI::Validator milliseconds_in(std::int64_t min, std::int64_t max, const std::string& rule) {
  return whole_number_in(min, max, rule, "MS");
}

// Splits argv at the first "--": what dlockctl parses, and the command lock, semaphore, ... run
// (which CLI11 then never sees, so none of its options can be taken for dlockctl's).
struct SplitArgs {
  std::vector<std::string> own;  // argv[1] up to "--", reversed: CLI11's parse(vector) order
  std::optional<std::vector<std::string>> command;
};
SplitArgs split_at_double_dash(int argc, char** argv) {
  SplitArgs split;
  int i = 1;
  for (; i < argc && std::string_view(argv[i]) != "--"; ++i) split.own.emplace_back(argv[i]);
  std::reverse(split.own.begin(), split.own.end());
  if (i < argc) split.command.emplace(argv + i + 1, argv + argc);
  return split;
}

// run-once's --every or --daily-at (one of them given; CLI11 checked --every's range). Parsed
// before anything is connected to, so a bad value is a usage error (exit 2) like the others.
dlock::Schedule job_schedule(const std::optional<std::int64_t>& every_ms, const std::string& daily_at) {
  if (every_ms) return dlock::Schedule::every(std::chrono::milliseconds(*every_ms));
  const auto digit = [](char c) { return c >= '0' && c <= '9'; };
  const bool shaped = daily_at.size() == 5 && digit(daily_at[0]) && digit(daily_at[1]) && daily_at[2] == ':' &&
                      digit(daily_at[3]) && digit(daily_at[4]);
  const int hour = shaped ? (daily_at[0] - '0') * 10 + (daily_at[1] - '0') : -1;
  const int minute = shaped ? (daily_at[3] - '0') * 10 + (daily_at[4] - '0') : -1;
  if (!shaped || hour > 23 || minute > 59) {
    throw CommandError(dlockctl::kUsage, "run-once --daily-at \"" + dlock::escape_text(daily_at) +
                                             "\" breaks the rule: HH:MM in UTC, 00:00 to 23:59");
  }
  return dlock::Schedule::daily_at(hour, minute);
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
      "dlockctl: who holds a lock and who waits for it, across dlock, Apache Curator and kazoo clients;\n"
      "and a command run while a lock, semaphore leases or the leadership of an election are held (lock,\n"
      "read-lock, semaphore, elect), as flock(1) runs one under a file lock.\n"
      "Lock paths are lock directories, as a dlock::Mutex or Curator's InterProcessMutex names them."};
  app.footer(std::string(dlockctl::kExitCodesHelp) +
             "Examples:\n"
             "  dlockctl --connect zk1:2181 show /locks/orders/42\n"
             "  dlockctl --connect zk1:2181 why /locks/orders/42 --base /locks\n"
             "  dlockctl --connect zk1:2181 deadlocks /locks\n"
             "  dlockctl --connect zk1:2181 lock /locks/nightly-report -- nightly-report --day today\n"
             "  dlockctl --connect zk1:2181 read-lock /locks/catalogue --timeout 30s -- export-catalogue\n"
             "  dlockctl --connect zk1:2181 lock /locks/orders --verbose      (holds it until Ctrl-C)\n"
             "  dlockctl --connect zk1:2181 semaphore /semaphores/reindex --leases 3 -- reindex-shard\n"
             "  dlockctl --connect zk1:2181 elect /elections/scheduler --id \"$(hostname)\" -- run-scheduler\n"
             "  dlockctl --connect zk1:2181 revoke /locks/nightly-report/_c_...-lock-0000000007\n");
  app.require_subcommand(1);
  // Global options may also follow the command ("dlockctl show /x --auth ..."): otherwise CLI11
  // reports them as unexpected arguments, secret included.
  app.fallthrough();

  std::string connect;
  std::vector<std::string> auth;
  bool json = false;
  std::int64_t connect_timeout_ms = 10'000;
  app.add_option("--connect", connect,
                 "ZooKeeper connect string HOST:PORT[,HOST:PORT...][/chroot] (default: $DLOCK_CONNECT)")
      ->envname("DLOCK_CONNECT")
      ->required();
  app.set_version_flag("--version", "dlockctl " + std::string(dlock::version()), "print dlockctl's version and exit");
  app.add_option("--auth", auth, "credentials SCHEME:SECRET (e.g. digest:user:password), repeatable")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.add_flag("--json", json, "print one JSON document on stdout (errors too, as {\"error\", \"exit_code\"})");
  auto* connect_timeout_ms_option = app.add_option("--connect-timeout-ms", connect_timeout_ms,
                                                   "give up connecting after this many milliseconds (default 10000)");
  app.add_option("--connect-timeout", connect_timeout_ms, "--connect-timeout-ms as a duration: 500ms, 10s, 2m")
      ->type_name("DURATION")
      ->transform(duration_in(1, kMaxTimeoutMs))
      ->excludes(connect_timeout_ms_option);
  std::int64_t session_timeout_ms = 10'000;
  auto* session_timeout_ms_option =
      app.add_option("--session-timeout-ms", session_timeout_ms,
                     "ZooKeeper session timeout to ask for (default 10000; the server clamps it into its range, by "
                     "default 4000..40000): how long a dead dlockctl's lock outlives it")
          ->check(milliseconds_in(1, 2'147'483'647, "a whole number of milliseconds from 1 to 2147483647"));
  app.add_option("--session-timeout", session_timeout_ms, "--session-timeout-ms as a duration: 4s, 30s")
      ->type_name("DURATION")
      ->transform(duration_in(1, 2'147'483'647))
      ->excludes(session_timeout_ms_option);

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
                                  "--timeout (exit 1)");
  wait->add_option("PATH", path, "the lock directory")->required();
  wait->add_option("--timeout", timeout_ms, "give up after this long: 500ms, 10s, 2m (default: no limit)")
      ->type_name("DURATION")
      ->transform(duration_in(0, kMaxTimeoutMs))
      ->excludes(wait->add_option("--timeout-ms", timeout_ms, "--timeout in milliseconds"));

  std::optional<std::int64_t> updates;
  auto* watch = app.add_subcommand("watch",
                                   "print the queue of PATH now and again each time it changes "
                                   "(--json: one JSON document per line), until Ctrl-C, --timeout "
                                   "or --updates");
  watch->add_option("PATH", path, "the lock directory")->required();
  watch->add_option("--timeout", timeout_ms, "stop after this long: 500ms, 10s, 2m (default: no limit)")
      ->type_name("DURATION")
      ->transform(duration_in(0, kMaxTimeoutMs))
      ->excludes(watch->add_option("--timeout-ms", timeout_ms, "--timeout in milliseconds"));
  watch->add_option("--updates", updates,
                    "stop after printing this many updates, the first included (default: no limit)");

  std::string graph_base = "/";
  auto* waits = app.add_subcommand("waits",
                                   "who waits for whom under BASE, session by session, joined across lock paths "
                                   "(each node's owning session): what each holds, what it waits for, behind whom");
  waits->add_option("BASE", graph_base, "where to look, e.g. /locks (default \"/\": everything)");
  auto* why = app.add_subcommand("why",
                                 "why PATH's waiters wait: behind whom, held since when, and what that holder itself "
                                 "waits for, lock by lock across BASE, to the end of the chain or around a cycle");
  why->add_option("PATH", path, "the lock directory")->required();
  why->add_option("--base", graph_base, "the locks to follow the chain through (default \"/\": everything)");
  auto* deadlocks = app.add_subcommand(
      "deadlocks",
      "the cycles of waits under BASE: exit 0 when there is none, 5 for a deadlock, 6 for only possible ones (see "
      "the exit codes)");
  deadlocks->add_option("BASE", graph_base, "where to look, e.g. /locks (default \"/\": everything)");

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

  std::string revoke_target;
  auto* revoke = app.add_subcommand("revoke",
                                    "ask the holder of a lock node to give it up (Curator's Revoker): a holder run "
                                    "with --revocable stops its command; one that does not listen is left alone");
  revoke
      ->add_option("NODE", revoke_target,
                   "the lock node's full path: PATH/NODE as `dlockctl show PATH` lists it, or a holder's DLOCK_NODE")
      ->required();

  // lock, read-lock, semaphore and elect: PATH, the wait's bound and the kill delay; the rest is
  // each subcommand's.
  std::optional<std::int64_t> kill_after_ms;
  bool revocable = false;
  bool verbose = false;
  const auto ms_rule = [](std::int64_t min) {
    return milliseconds_in(min, kMaxTimeoutMs,
                           "a whole number of milliseconds from " + std::to_string(min) + " to " +
                               std::to_string(kMaxTimeoutMs) + " (a year)");
  };
  auto add_hold_command = [&](const char* name, const char* description, const char* path_example,
                              const std::string& timeout_help, std::int64_t min_timeout, const char* variables,
                              const char* example) {
    auto* command = app.add_subcommand(name, description);
    command->add_option("PATH", path, path_example)->required();
    command->add_option("--timeout", timeout_ms, timeout_help + " (a duration: 500ms, 10s, 2m)")
        ->type_name("DURATION")
        ->transform(duration_in(min_timeout, kMaxTimeoutMs))
        ->excludes(
            command->add_option("--timeout-ms", timeout_ms, "--timeout in milliseconds")->check(ms_rule(min_timeout)));
    command
        ->add_option("--kill-after", kill_after_ms,
                     "if the hold is lost (or, with --revocable, revoked) while CMD runs, CMD gets SIGTERM, then "
                     "SIGKILL this long later: 500ms, 10s (default 10s)")
        ->type_name("DURATION")
        ->transform(duration_in(0, kMaxTimeoutMs))
        ->excludes(
            command->add_option("--kill-after-ms", kill_after_ms, "--kill-after in milliseconds")->check(ms_rule(0)));
    command->add_flag("--verbose", verbose,
                      "say on stderr what it waits for and behind whom (who holds it, how many queue), and how long "
                      "the wait took");
    command->footer(
        "The command follows \"--\": dlockctl ... " + std::string(name) +
        " PATH [OPTIONS] -- CMD [ARGS...]. It runs with " + variables +
        " set; its exit status is dlockctl's (see dlockctl --help for dlockctl's own).\n" +
        (std::string(name) == "run-once"
             ? std::string("A command is required. While the job's lock is waited for, signals are not acted on; "
                           "they reach CMD once it runs.\n")
             : std::string("Without a command the hold is kept until dlockctl is interrupted (Ctrl-C, SIGTERM, "
                           "SIGHUP: exit 0), as etcdctl lock does; those variables are printed on stdout once it is "
                           "granted.\n")) +
        "Example: " + example);
    return command;
  };
  const auto add_revocable = [&](CLI::App* command) {
    command->add_flag("--revocable", revocable,
                      "listen for revocation requests on the hold's node(s) (dlockctl revoke, Curator's Revoker): "
                      "one stops CMD as a lost hold does (SIGTERM, SIGKILL --kill-after later), exit 122");
  };
  const std::string wait_help =
      "give up (exit 124, nothing run) if not granted within this long; 0ms: only if free now "
      "(default: wait as long as it takes)";
  const char* lock_variables = "DLOCK_FENCING_TOKEN, DLOCK_PATH and DLOCK_NODE";
  auto* lock = add_hold_command("lock",
                                "run a command while holding PATH's exclusive lock (as Curator's InterProcessMutex "
                                "and dlock::Mutex take it): dlockctl lock PATH -- CMD [ARGS...]",
                                "the lock directory, e.g. /locks/nightly-report", wait_help, 0, lock_variables,
                                "dlockctl --connect zk1:2181 lock /locks/nightly-report -- nightly-report --day today");
  add_revocable(lock);
  auto* read_lock = add_hold_command("read-lock",
                                     "run a command while holding the read side of PATH (as Curator's "
                                     "InterProcessReadWriteLock and dlock::SharedMutex take it): readers share, "
                                     "writers and exclusive holders exclude them",
                                     "the lock directory, e.g. /locks/catalogue", wait_help, 0, lock_variables,
                                     "dlockctl --connect zk1:2181 read-lock /locks/catalogue --timeout 30s -- "
                                     "export-catalogue");
  add_revocable(read_lock);

  std::int64_t max_leases = 0;
  std::int64_t lease_count = 1;
  auto* semaphore = add_hold_command(
      "semaphore",
      "run a command while holding --count of the --leases leases of PATH's semaphore (as Curator's "
      "InterProcessSemaphoreV2 and dlock::Semaphore take them): at most --leases at once across every client",
      "the semaphore's directory, e.g. /semaphores/reindex",
      "give up (exit 124, nothing run) if the leases are not granted within this long; 0ms: only if "
      "free now (default: wait as long as it takes)",
      0,
      "DLOCK_FENCING_TOKEN (the largest of its leases' tokens), DLOCK_PATH, DLOCK_NODE (the first lease's node) "
      "and DLOCK_NODES (every lease's node, one per line)",
      "dlockctl --connect zk1:2181 semaphore /semaphores/reindex --leases 3 -- reindex-shard");
  semaphore
      ->add_option("--leases", max_leases,
                   "how many leases the semaphore has: every client of PATH must use the same number (required)")
      ->required()
      ->check(whole_number_in(1, INT_MAX, "a whole number of leases from 1 to " + std::to_string(INT_MAX), "N"));
  semaphore->add_option("--count", lease_count, "how many of them to hold while CMD runs, at most --leases (default 1)")
      ->check(whole_number_in(1, INT_MAX, "a whole number of leases from 1 to --leases", "K"));
  add_revocable(semaphore);

  std::string participant_id;
  auto* elect = add_hold_command(
      "elect",
      "join PATH's leader election (as Curator's LeaderSelector and dlock::LeaderSelector do) and run a command "
      "while leader; the next participant leads once it exits",
      "the election's directory, e.g. /elections/scheduler",
      "give up (exit 124, nothing run, the participant leaves) if not leader within this long "
      "(default: wait as long as it takes)",
      1, "DLOCK_FENCING_TOKEN (the term's token), DLOCK_PATH and DLOCK_NODE (the participant's node)",
      "dlockctl --connect zk1:2181 elect /elections/scheduler --id \"$(hostname)\" -- run-scheduler");
  elect
      ->add_option("--id", participant_id,
                   "the participant's id, as Curator's getParticipants() and LeaderSelector::participants() show it "
                   "(required)")
      ->required();

  std::optional<std::int64_t> every_ms;
  std::string daily_at;
  bool at_least_once = false;
  std::optional<std::int64_t> skip_late_ms;
  auto* run_once = add_hold_command(
      "run-once",
      "run a command on one host per period: the same line in every host's crontab, and CMD runs once per "
      "period, the period named by ZooKeeper's clock, not the host's (dlock::PeriodicJob)",
      "the job's node, e.g. /jobs/reports-nightly (its record, clock and lock go below it)",
      "give up (exit 124, nothing run) if the job's lock is not granted within this long (default: until the "
      "period ends)",
      0,
      "DLOCK_FENCING_TOKEN, DLOCK_PATH, DLOCK_NODE, DLOCK_JOB_PERIOD (the period's number), "
      "DLOCK_JOB_PERIOD_START (its start, ms since the epoch) and DLOCK_JOB_ATTEMPT",
      "dlockctl --connect zk1:2181 run-once /jobs/reports-nightly --daily-at 02:30 -- nightly-report");
  auto* every_option = run_once
                           ->add_option("--every", every_ms,
                                        "one period every DURATION, aligned to the epoch (UTC): 30s, 10m, 1h, 24h; "
                                        "from 1s to a year")
                           ->type_name("DURATION")
                           ->transform(duration_in(1000, kMaxTimeoutMs));
  run_once->add_option("--daily-at", daily_at, "one period a day, beginning at HH:MM UTC")
      ->type_name("HH:MM")
      ->excludes(every_option);
  run_once->add_flag("--at-least-once", at_least_once,
                     "record the period when CMD exits 0, so a host that dies or fails leaves it to the next call "
                     "in the period (default: at most once: recorded before CMD starts)");
  run_once
      ->add_option("--skip-late", skip_late_ms,
                   "a period no host has run yet is skipped (exit 121) when this call comes later than this after "
                   "its start (default: run it however late)")
      ->type_name("DURATION")
      ->transform(duration_in(0, kMaxTimeoutMs));

  // The subcommand that runs a command, if one was parsed.
  const auto hold_command = [&]() -> const char* {
    for (const auto* command : {lock, read_lock, semaphore, elect, run_once}) {
      if (command->parsed()) return command->get_name().c_str();
    }
    return nullptr;
  };

  auto split = split_at_double_dash(argc, argv);
  app.name(argv[0]);  // as parse(argc, argv) would name it in the usage line
  // The exception CLI11 threw, if any.
  const auto try_parse = [&app](std::vector<std::string> reversed_args) -> std::exception_ptr {
    try {
      app.parse(reversed_args);
      return nullptr;
    } catch (const CLI::ParseError&) {
      return std::current_exception();
    }
  };
  auto parse_error = try_parse(split.own);
  if (split.command && !hold_command()) {
    // The "--" of another command ("show -- /x"): read by CLI11 as before lock existed.
    split.command.reset();
    app.clear();
    std::vector<std::string> all(argv + 1, argv + argc);
    std::reverse(all.begin(), all.end());
    parse_error = try_parse(std::move(all));
  }
  if (parse_error) {
    try {
      std::rethrow_exception(parse_error);
    } catch (const CLI::ExtrasError&) {
      // CLI11 would list the unexpected arguments: one of them may be a password.
      const auto* hold = hold_command();
      return fail(json, dlockctl::kUsage,
                  std::string("unexpected arguments after the command (not shown: they may hold a password)") +
                      (hold ? std::string("; the command to run goes after \"--\": dlockctl ") + hold +
                                  " PATH [OPTIONS] -- CMD [ARGS...]"
                            : std::string()) +
                      "; see dlockctl --help");
    } catch (const CLI::ParseError& e) {
      if (e.get_exit_code() == 0) return app.exit(e);  // --help
      return fail(json, dlockctl::kUsage, e.what());
    }
  }

  std::optional<dlock::Schedule> schedule;  // run-once's, checked with the other options
  const char* const hold_name = hold_command();
  const bool runs_command = hold_name != nullptr;
  // A failure before the command runs must not look like one of the command's own statuses.
  const int failure = runs_command ? dlockctl::kNotStarted : dlockctl::kZooKeeper;
  try {
    if (runs_command) {
      const std::string name = hold_name;
      if (split.command && split.command->empty() && !run_once->parsed()) {
        throw CommandError(dlockctl::kUsage, name + " needs a command after \"--\": dlockctl " + name +
                                                 " PATH [OPTIONS] -- CMD [ARGS...] (or no \"--\": hold until "
                                                 "interrupted)");
      }
      if (json) {
        throw CommandError(dlockctl::kUsage, "--json does not go with " + name + ": the command's output is on stdout");
      }
      if (run_once->parsed() && (!split.command || split.command->empty())) {
        throw CommandError(dlockctl::kUsage,
                           "run-once needs a command after \"--\": dlockctl run-once PATH --every "
                           "DURATION -- CMD [ARGS...]");
      }
      if (run_once->parsed() && !every_ms && daily_at.empty()) {
        throw CommandError(dlockctl::kUsage, "run-once needs --every DURATION or --daily-at HH:MM");
      }
      if (run_once->parsed()) schedule = job_schedule(every_ms, daily_at);
    }
    if (connect_timeout_ms <= 0) {
      throw CommandError(dlockctl::kUsage,
                         "--connect-timeout-ms must be positive, got " + std::to_string(connect_timeout_ms));
    }
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
    if (semaphore->parsed() && lease_count > max_leases) {
      throw CommandError(dlockctl::kUsage, "semaphore --count must be from 1 to --leases (" +
                                               std::to_string(max_leases) + "), got " + std::to_string(lease_count));
    }
    if (updates && *updates < 1) {
      throw CommandError(dlockctl::kUsage, "watch --updates must be 1 or more, got " + std::to_string(*updates));
    }
    if (list->parsed()) check_base(base);
    if ((waits->parsed() || why->parsed() || deadlocks->parsed()) && graph_base != "/") {
      check_path(why->parsed() ? "why --base" : "BASE", graph_base);
    }
    if (why->parsed() && graph_base != "/" && path != graph_base && !path.starts_with(graph_base + "/")) {
      throw CommandError(dlockctl::kUsage, "why PATH \"" + dlock::escape_text(path) + "\" must be under --base \"" +
                                               dlock::escape_text(graph_base) +
                                               "\" (the locks the chain is followed through)");
    }
    if (show->parsed() || wait->parsed() || watch->parsed() || release->parsed() || why->parsed() || runs_command) {
      check_path("PATH", path);
    }
    if (revoke->parsed()) check_path("revoke NODE", revoke_target);
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
                                  .session_timeout = std::chrono::milliseconds(session_timeout_ms),
                                  .connect_timeout = std::chrono::milliseconds(connect_timeout_ms),
                                  .renew_expired_session = false,
                                  .auth = std::move(credentials)};
    if (runs_command) {
      // Before dlockctl opens any descriptor of its own: what the command may inherit.
      auto inherited_fds = dlockctl::open_descriptors();
      // The signals are blocked before the Session starts the client's threads, which inherit it.
      boost::asio::io_context io;
      // Without a command, the signals are the only way to end the hold: read even if ignored.
      dlockctl::SignalWatch signals(io, /*stop_even_if_ignored=*/!split.command.has_value());
      dlock::Session session(std::move(options));
      const auto patience = timeout_ms ? std::optional(std::chrono::milliseconds(*timeout_ms)) : std::nullopt;
      const std::string what = semaphore->parsed()
                                   ? std::to_string(lease_count) + " of the " + std::to_string(max_leases) +
                                         " leases of " + dlock::escape_text(path)
                               : elect->parsed() ? "the leadership of " + dlock::escape_text(path)
                               : lock->parsed()  ? "the lock on " + dlock::escape_text(path)
                                                 : "the read lock on " + dlock::escape_text(path);
      if (run_once->parsed()) {
        dlockctl::RunOnceOptions job{
            .path = path,
            .job = {.schedule = *schedule,
                    .delivery = at_least_once ? dlock::Delivery::AtLeastOnce : dlock::Delivery::AtMostOnce},
            .run = {.command = std::move(*split.command),
                    .inherited_fds = std::move(inherited_fds),
                    .kill_after = std::chrono::milliseconds(kill_after_ms.value_or(10'000)),
                    .revoked = {}},
            .verbose = verbose};
        if (skip_late_ms) {
          job.job.missed = dlock::MissedRun::Skip;
          job.job.late_limit = std::chrono::milliseconds(*skip_late_ms);
        }
        job.job.lock_wait = patience;
        return dlockctl::run_once(session, std::move(job), signals, io);
      }
      if (verbose) dlockctl::report_before_wait(session, path, what);
      const auto wait_began = std::chrono::steady_clock::now();
      std::unique_ptr<dlockctl::Hold> hold;
      if (semaphore->parsed()) {
        auto acquired = dlockctl::acquire_leases(session, path, static_cast<int>(max_leases),
                                                 static_cast<int>(lease_count), patience, signals, io);
        if (const auto* status = std::get_if<int>(&acquired)) return *status;
        hold = std::move(std::get<0>(acquired));
      } else if (elect->parsed()) {
        auto acquired = dlockctl::await_leadership(session, path, participant_id, patience, signals, io);
        if (const auto* status = std::get_if<int>(&acquired)) return *status;
        hold = std::move(std::get<0>(acquired));
      } else {
        const auto mode = lock->parsed() ? dlock::LockMode::Exclusive : dlock::LockMode::Read;
        auto acquired = dlockctl::acquire_lock(session, path, mode, patience, signals, io);
        if (const auto* status = std::get_if<int>(&acquired)) return *status;
        hold = std::make_unique<dlockctl::LockHold>(std::move(std::get<dlockctl::LockHold>(acquired)));
      }
      if (verbose) dlockctl::report_granted(what, std::chrono::steady_clock::now() - wait_began, hold->fencing_token());
      // --revocable: a request on any of the hold's nodes (a request made before this counts).
      dlockctl::AnyStop revoked;
      std::vector<std::unique_ptr<dlock::RevocationWatch>> revocations;
      if (revocable) {
        for (const auto& node_path : hold->nodes()) {
          revocations.push_back(std::make_unique<dlock::RevocationWatch>(session, node_path));
          revoked.add(revocations.back()->stop_token());
        }
      }
      if (!split.command) return dlockctl::hold_until_interrupted(*hold, revoked.token(), signals, io);
      return dlockctl::run_under(*hold,
                                 {.command = std::move(*split.command),
                                  .inherited_fds = std::move(inherited_fds),
                                  .kill_after = std::chrono::milliseconds(kill_after_ms.value_or(10'000)),
                                  .revoked = revoked.token()},
                                 signals, io);
    }
    dlock::Session session(std::move(options));
    if (list->parsed()) return dlockctl::list_locks(session, base, json);
    if (show->parsed()) return dlockctl::show_lock(session, path, json);
    if (wait->parsed()) return dlockctl::wait_free(session, path, timeout_ms, json);
    if (watch->parsed()) return dlockctl::watch_lock(session, path, timeout_ms, updates, json);
    if (revoke->parsed()) return dlockctl::revoke_node(session, revoke_target, json);
    if (waits->parsed()) return dlockctl::show_waits(session, graph_base, json);
    if (why->parsed()) return dlockctl::explain_wait(session, path, graph_base, json);
    if (deadlocks->parsed()) return dlockctl::find_deadlocks(session, graph_base, json);
    return dlockctl::force_release(session, path, node, json);
  } catch (const CommandError& e) {
    return fail(json, e.code(), e.what());
  } catch (const dlock::ConnectError& e) {
    return fail(json, failure, std::string("--connect: ") + e.what());
  } catch (const dlock::InvalidPath& e) {
    return fail(json, dlockctl::kUsage, e.what());
  } catch (const dlock::Error& e) {
    return fail(json, failure, e.what());
  } catch (const std::exception& e) {
    return fail(json, failure, e.what());
  }
}

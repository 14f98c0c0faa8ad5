#include "run_once.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>
#include <stop_token>

#include "dlock/async_recipes.hpp"
#include "dlock/inspect.hpp"
#include "durations.hpp"
#include "exit_codes.hpp"
#include "hold.hpp"

namespace dlockctl {
namespace {

std::int64_t epoch_ms(std::chrono::system_clock::time_point when) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(when.time_since_epoch()).count();
}

// The run's lock as run_under sees it. The recipe releases the lock once the job returns, so
// release() here does nothing.
class JobHold final : public Hold {
 public:
  explicit JobHold(const dlock::JobRun& run) : run_(run) {}
  std::string_view kind() const override { return "job lock"; }
  const std::string& path() const override { return run_.path; }
  const std::string& node() const override { return run_.lock_node; }
  std::vector<std::string> environment() const override {
    return {"DLOCK_JOB_PERIOD=" + std::to_string(run_.period),
            "DLOCK_JOB_PERIOD_START=" + std::to_string(epoch_ms(run_.period_start)),
            "DLOCK_JOB_ATTEMPT=" + std::to_string(run_.attempt)};
  }
  std::int64_t fencing_token() const override { return run_.fencing_token; }
  std::stop_token stop_token() const override { return run_.stop_token; }
  void release() noexcept override {}

 private:
  const dlock::JobRun& run_;
};

// CMD's status when it is not 0: the job failed (recorded Failed).
struct CommandStatus : std::runtime_error {
  explicit CommandStatus(int s) : std::runtime_error("exit status " + std::to_string(s)), status(s) {}
  int status;
};

// One step of the job's call (its claim, or a claim's finish, given a handler), awaited on this
// thread's io_context while the signals are read there: a SIGINT, SIGTERM or SIGHUP cancels it.
// The call holds no thread, so nothing runs beside this one. `interrupted`: the first signal.
template <class Step>
dlock::JobClaim await_step(Step&& step, const std::string& path, SignalWatch& signals, boost::asio::io_context& io,
                           int& interrupted) {
  boost::asio::cancellation_signal cancel;
  std::optional<boost::system::error_code> result;
  dlock::JobClaim claim;
  step(boost::asio::bind_executor(
      io, boost::asio::bind_cancellation_slot(cancel.slot(), [&](boost::system::error_code ec, dlock::JobClaim c) {
        result = ec;
        claim = std::move(c);
      })));
  signals.set_handler([&](const SignalWatch::Signal& s) {
    if (s.number == SIGCHLD || interrupted != 0) return;  // no command yet: no child of ours
    interrupted = s.number;
    cancel.emit(boost::asio::cancellation_type::terminal);
  });
  while (!result) io.run_one();
  signals.set_handler(nullptr);  // a signal from now on waits in the kernel for run_under
  // Cancelled before the period was recorded: the call's Stopped (nothing run or recorded).
  if (*result == boost::asio::error::operation_aborted) return claim;
  if (*result) {
    if (*result == dlock::make_error_code(dlock::errc::lock_lost)) {
      throw dlock::LockLost(*result, "job " + path + ": " + result->message());
    }
    throw dlock::Error(*result, "job " + path + ": " + result->message());
  }
  return claim;
}

std::string when(const dlock::JobRecord& record) {
  const auto ms = epoch_ms(record.finished);
  const std::time_t seconds = ms / 1000;
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[64];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

}  // namespace

bool regular_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// Where execvp would find `name` (a name with a '/' is taken as it is), or "" when nowhere.
std::string find_command(const std::string& name) {
  if (name.find('/') != std::string::npos) return ::access(name.c_str(), F_OK) == 0 ? name : std::string();
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/bin:/usr/bin";  // execvp's default
  for (std::size_t begin = 0;;) {
    const auto end = dirs.find(':', begin);
    std::string dir = dirs.substr(begin, end - begin);
    if (dir.empty()) dir = ".";
    const std::string candidate = dir + "/" + name;
    if (regular_file(candidate) && ::access(candidate.c_str(), X_OK) == 0) return candidate;
    if (end == std::string::npos) return {};
    begin = end + 1;
  }
}

int run_once(dlock::Session& session, RunOnceOptions options, SignalWatch& signals, boost::asio::io_context& io) {
  // A command that cannot start must not take the period from the fleet (at most once, it
  // would be recorded as this period's failed run): checked before anything is recorded.
  const std::string& name = options.run.command.front();
  const std::string found = find_command(name);
  if (found.empty()) {
    std::cerr << "dlockctl run-once: " << dlock::escape_text(name) << ": command not found; nothing run\n";
    return kCommandNotFound;
  }
  if (!regular_file(found) || ::access(found.c_str(), X_OK) != 0) {
    std::cerr << "dlockctl run-once: " << dlock::escape_text(found) << ": not executable; nothing run\n";
    return kCannotExecute;
  }
  dlock::PeriodicJob job(session, options.path, options.job);
  int status = kOk;
  int signal = 0;
  dlock::JobClaim claim =
      await_step([&](auto handler) { job.async_claim(std::move(handler)); }, options.path, signals, io, signal);
  // Due more than once only at least once, after a previous period run again first.
  while (claim.due()) {
    const dlock::JobRun& run = claim.run();
    std::exception_ptr failure;
    if (signal != 0) {
      // Came after the period was recorded as running (a cancellation before that is Stopped).
      std::cerr << "dlockctl run-once: " << ::strsignal(signal) << " as " << dlock::escape_text(options.path)
                << " period " << run.period << " was recorded as running: CMD was not run\n";
      status = kSignalBase + signal;
    } else {
      JobHold hold(run);
      status = run_under(hold, options.run, signals, io);
    }
    if (status != kOk) failure = std::make_exception_ptr(CommandStatus(status));
    claim = await_step([&](auto handler) { claim.async_finish(failure, std::move(handler)); }, options.path, signals,
                       io, signal);
    if (status != kOk) return status;  // recorded Failed; the call ends there
  }
  const dlock::JobResult& result = claim.result();
  const auto& record = result.record;
  switch (result.outcome) {
    case dlock::JobOutcome::Ran:
      if (result.retried >= 0) {
        std::cerr << "dlockctl run-once: " << dlock::escape_text(options.path) << ": ran period " << result.retried
                  << " again (its runner died), then period " << result.period << "\n";
      }
      return status;
    case dlock::JobOutcome::RanLockLost:
      std::cerr << "dlockctl run-once: " << dlock::escape_text(options.path) << ": period " << result.period
                << " ran (exit 0), but its end could not be recorded (the job's lock was lost); with "
                << "--at-least-once another host may run it again\n";
      return kHoldLost;
    case dlock::JobOutcome::AlreadyDone:
      if (options.verbose) {
        std::cerr << "dlockctl run-once: " << dlock::escape_text(options.path) << ": period " << result.period
                  << " already " << dlock::to_string(record.state) << " (period " << record.period << ") by "
                  << dlock::escape_text(record.by) << " at " << when(record) << "; nothing run\n";
      }
      return kAlreadyDone;
    case dlock::JobOutcome::Skipped:
      if (options.verbose) {
        std::cerr << "dlockctl run-once: " << dlock::escape_text(options.path) << ": period " << result.period
                  << " skipped: too late in the period (--skip-late); nothing run\n";
      }
      return kSkipped;
    case dlock::JobOutcome::PeriodOver:
      std::cerr << "dlockctl run-once: " << dlock::escape_text(options.path) << ": the job's lock was not granted "
                << (options.job.lock_wait ? "within --timeout" : "before the period ended") << "; nothing run\n";
      return kWaitTimedOut;
    case dlock::JobOutcome::Stopped:
      std::cerr << "dlockctl run-once: " << ::strsignal(signal) << " while deciding or waiting for the job's lock on "
                << dlock::escape_text(options.path) << ": stopped, nothing run or recorded\n";
      return kSignalBase + signal;
  }
  return kNotStarted;
}

}  // namespace dlockctl

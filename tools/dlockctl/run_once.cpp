#include "run_once.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>
#include <stop_token>
#include <thread>

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

// Reads the signals on a thread of its own while run_if_due blocks this one (deciding, waiting
// for the job's lock): a SIGINT, SIGTERM or SIGHUP then calls the call off through `stop`.
// Finished before CMD starts, from when run_under reads the signals on this thread.
class SignalPump {
 public:
  SignalPump(SignalWatch& signals, boost::asio::io_context& io, std::stop_source& stop)
      : signals_(signals), io_(io), work_(io.get_executor()) {
    signals_.set_handler([this, &stop](const SignalWatch::Signal& s) {
      if (s.number == SIGCHLD || interrupted_ != 0) return;  // no command yet: no child of ours
      interrupted_ = s.number;
      stop.request_stop();
    });
    thread_ = std::thread([this] { io_.run(); });
  }
  ~SignalPump() { finish(); }
  SignalPump(const SignalPump&) = delete;
  SignalPump& operator=(const SignalPump&) = delete;

  // Stops the thread (this thread runs the io_context from now on); the signal that came, or 0.
  int finish() {
    if (thread_.joinable()) {
      work_.reset();
      io_.stop();
      thread_.join();
      io_.restart();
      signals_.set_handler(nullptr);  // a signal from now on waits in the kernel for run_under
    }
    return interrupted_;
  }

 private:
  SignalWatch& signals_;
  boost::asio::io_context& io_;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_;
  std::atomic<int> interrupted_{0};
  std::thread thread_;
};

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
  dlock::JobResult result;
  std::stop_source stop;
  SignalPump pump(signals, io, stop);
  try {
    result = job.run_if_due(
        [&](const dlock::JobRun& run) {
          if (const int signal = pump.finish()) {
            // Came after the period was recorded as running (a stop before that returns Stopped).
            std::cerr << "dlockctl run-once: " << ::strsignal(signal) << " as " << dlock::escape_text(options.path)
                      << " period " << run.period << " was recorded as running: CMD was not run\n";
            throw CommandStatus(kSignalBase + signal);
          }
          JobHold hold(run);
          status = run_under(hold, options.run, signals, io);
          if (status != kOk) throw CommandStatus(status);
        },
        stop.get_token());
  } catch (const CommandStatus& failed) {
    return failed.status;
  }
  const int signal = pump.finish();
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

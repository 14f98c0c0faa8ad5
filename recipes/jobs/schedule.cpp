// Schedule: which period a moment falls in, by integer arithmetic on milliseconds since the epoch
// (floor division, so moments before the epoch fall in negative periods rather than period 0).
#include <cstdio>
#include <string>

#include "dlock/periodic_job.hpp"

namespace dlock {
namespace {

using std::chrono::milliseconds;

constexpr milliseconds kShortest{1000};
constexpr milliseconds kLongest{366LL * 24 * 3600 * 1000};

[[noreturn]] void invalid(const std::string& what) { throw Error(make_error_code(errc::invalid_argument), what); }

std::int64_t floor_div(std::int64_t a, std::int64_t b) noexcept {
  const std::int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

std::string compact(milliseconds d) {
  const std::int64_t ms = d.count();
  if (ms % 86'400'000 == 0) return std::to_string(ms / 86'400'000) + "d";
  if (ms % 3'600'000 == 0) return std::to_string(ms / 3'600'000) + "h";
  if (ms % 60'000 == 0) return std::to_string(ms / 60'000) + "m";
  if (ms % 1000 == 0) return std::to_string(ms / 1000) + "s";
  return std::to_string(ms) + "ms";
}

}  // namespace

Schedule Schedule::every(milliseconds length) { return every(length, milliseconds(0)); }

Schedule Schedule::every(milliseconds length, milliseconds offset) {
  if (length < kShortest || length > kLongest) {
    invalid("Schedule: a period of " + std::to_string(length.count()) +
            " ms breaks the rule: a period is from 1 s to 366 days");
  }
  if (offset < milliseconds(0) || offset >= length) {
    invalid("Schedule: an offset of " + std::to_string(offset.count()) +
            " ms breaks the rule: 0 <= offset < the period (" + std::to_string(length.count()) + " ms)");
  }
  return Schedule(length, offset);
}

Schedule Schedule::daily_at(int hour, int minute) {
  if (hour < 0 || hour > 23 || minute < 0 || minute > 59) {
    invalid("Schedule::daily_at(" + std::to_string(hour) + ", " + std::to_string(minute) +
            ") breaks the rule: 0 <= hour <= 23 and 0 <= minute <= 59 (UTC)");
  }
  return Schedule(std::chrono::hours(24), std::chrono::hours(hour) + std::chrono::minutes(minute));
}

std::int64_t Schedule::period_at(std::chrono::system_clock::time_point when) const noexcept {
  const auto ms = std::chrono::duration_cast<milliseconds>(when.time_since_epoch()).count();
  return floor_div(ms - offset_.count(), length_.count());
}

std::chrono::system_clock::time_point Schedule::start_of(std::int64_t period) const noexcept {
  return std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(length_ * period + offset_));
}

std::string Schedule::describe() const {
  if (length_ == std::chrono::hours(24) && offset_ % std::chrono::minutes(1) == milliseconds(0)) {
    char at[32];
    std::snprintf(at, sizeof at, "daily at %02d:%02d UTC", static_cast<int>(offset_ / std::chrono::hours(1)),
                  static_cast<int>((offset_ % std::chrono::hours(1)) / std::chrono::minutes(1)));
    return at;
  }
  std::string text = "every " + compact(length_);
  if (offset_ != milliseconds(0)) text += " from +" + compact(offset_);
  return text;
}

const char* to_string(JobState state) noexcept {
  switch (state) {
    case JobState::Running:
      return "running";
    case JobState::Succeeded:
      return "succeeded";
    case JobState::Failed:
      return "failed";
    case JobState::Skipped:
      return "skipped";
  }
  return "unknown";
}

const char* to_string(JobOutcome outcome) noexcept {
  switch (outcome) {
    case JobOutcome::Ran:
      return "ran";
    case JobOutcome::RanLockLost:
      return "ran, lock lost";
    case JobOutcome::AlreadyDone:
      return "already done";
    case JobOutcome::Skipped:
      return "skipped";
    case JobOutcome::PeriodOver:
      return "period over";
    case JobOutcome::Stopped:
      return "stopped";
  }
  return "unknown";
}

}  // namespace dlock

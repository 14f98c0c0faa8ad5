// libdlock_skew_clock.so: shifts a process's wall clock by $DLOCK_TEST_CLOCK_SKEW_MS, for the
// periodic-job soak's "hosts" (LD_PRELOAD): clock_gettime(CLOCK_REALTIME...), gettimeofday and
// time answer the real time plus the skew; the monotonic clocks are left alone. The machine's
// clock is not touched. A program that needs the real time asks the kernel directly
// (syscall(SYS_clock_gettime, ...)), which this does not intercept.
#include <dlfcn.h>
#include <sys/time.h>
#include <time.h>

#include <cstdint>
#include <cstdlib>

namespace {

std::int64_t skew_ns() {
  static const std::int64_t skew = [] {
    const char* text = std::getenv("DLOCK_TEST_CLOCK_SKEW_MS");
    return text ? std::strtoll(text, nullptr, 10) * 1'000'000 : 0;
  }();
  return skew;
}

void shift(timespec* ts) {
  std::int64_t ns = static_cast<std::int64_t>(ts->tv_sec) * 1'000'000'000 + ts->tv_nsec + skew_ns();
  ts->tv_sec = static_cast<time_t>(ns / 1'000'000'000);
  ts->tv_nsec = static_cast<long>(ns % 1'000'000'000);
  if (ts->tv_nsec < 0) {
    ts->tv_nsec += 1'000'000'000;
    --ts->tv_sec;
  }
}

using ClockGettime = int (*)(clockid_t, timespec*);

}  // namespace

extern "C" int clock_gettime(clockid_t clock, timespec* ts) noexcept {
  static const auto real = reinterpret_cast<ClockGettime>(dlsym(RTLD_NEXT, "clock_gettime"));
  const int rc = real(clock, ts);
  if (rc == 0 && (clock == CLOCK_REALTIME || clock == CLOCK_REALTIME_COARSE)) shift(ts);
  return rc;
}

extern "C" int gettimeofday(struct timeval* tv, void*) noexcept {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  tv->tv_sec = ts.tv_sec;  // glibc declares tv nonnull
  tv->tv_usec = static_cast<suseconds_t>(ts.tv_nsec / 1000);
  return 0;
}

extern "C" time_t time(time_t* out) noexcept {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  if (out != nullptr) *out = ts.tv_sec;
  return ts.tv_sec;
}

// A periodic job's use as docs/SCHEDULED-JOBS.md shows it: the block is the body of main, with a
// Session on the test's server and the job's work declared.
#include <dlock/dlock.hpp>
#include <iostream>

extern "C" const char* dlock_snippet_connect() noexcept;

namespace {
void delete_expired_rows(std::int64_t fencing_token) { std::cout << "cleanup under token " << fencing_token << "\n"; }
}  // namespace

int main() {
  dlock::Session session({.connect = dlock_snippet_connect()});
  // @snippet
  if (result.outcome != dlock::JobOutcome::Ran) return 1;
}

// Test support: the threads this process runs (the C client's I/O and completion threads, dlock's
// janitor and task timer, the test's own...), read from /proc.
#pragma once

#include <dirent.h>

namespace dlock::testing {

inline int thread_count() {
  int n = 0;
  if (DIR* dir = ::opendir("/proc/self/task")) {
    while (const dirent* entry = ::readdir(dir)) n += entry->d_name[0] != '.';
    ::closedir(dir);
  }
  return n;
}

}  // namespace dlock::testing

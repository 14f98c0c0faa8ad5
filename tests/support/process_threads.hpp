// Test support: the threads this process runs (the C client's I/O and completion threads, dlock's
// janitor and task timer, the test's own...), read from /proc.
#pragma once

#include <dirent.h>

#include <cstddef>
#include <filesystem>
#include <set>
#include <string>

namespace dlock::testing {

inline int thread_count() {
  int n = 0;
  if (DIR* dir = ::opendir("/proc/self/task")) {
    while (const dirent* entry = ::readdir(dir)) n += entry->d_name[0] != '.';
    ::closedir(dir);
  }
  return n;
}

// The ids of this process's threads.
inline std::set<std::string> thread_ids() {
  std::set<std::string> ids;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) {
    ids.insert(entry.path().filename().string());
  }
  return ids;
}

// How many of the threads now were not there in `before` (threads that exited meanwhile do not
// count either way).
inline std::size_t threads_added_since(const std::set<std::string>& before) {
  std::size_t added = 0;
  for (const auto& id : thread_ids()) added += before.count(id) == 0 ? 1 : 0;
  return added;
}

}  // namespace dlock::testing

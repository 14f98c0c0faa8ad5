// dlock/testing/temp_dir.hpp: a temporary directory that removes itself (part of
// `dlock::testing`).
//
//   dlock::testing::TempDir dir("orders");                    // $TMPDIR/orders-XXXXXX
//   dlock::testing::HoldLogWriter writer(dir.path() + "/holds.jsonl");
//   ...                                                       // the destructor removes it all
//
// For what a test writes to files (hold logs, a fenced resource, a child process's output): once
// the TempDir goes, passed test or failed (an exception or a failed ASSERT unwinds through its
// destructor), nothing of it is left in TMPDIR. The kit's own servers (TestingServer,
// TestingEnsemble, PostgresServer, MariaDbServer) keep their data in one each.
//
// Contract: the constructor makes a fresh directory named <prefix>-XXXXXX (mkdtemp: a name no
// other process has, mode 0700) under $TMPDIR, or /tmp when TMPDIR is unset or empty; the
// destructor removes it and everything in it. A moved-from TempDir owns nothing: its path() is
// empty and its destructor removes nothing. Not copyable: one owner removes the directory once.
//
// Thread-safety: none for one object (path() may be read from any thread while no thread moves or
// destroys it); distinct objects are independent.
//
// Errors: the constructor throws std::runtime_error naming the path it tried and the system's
// reason (a TMPDIR that does not exist, or is not writable). The destructor never throws: what it
// cannot remove (say, a file another user made in it with no write permission on its directory)
// stays.
#pragma once

#include "dlock/config.hpp"  // first: a clear error below C++20

#include <string>
#include <string_view>

namespace dlock::testing {

class TempDir {
 public:
  explicit TempDir(std::string_view prefix);
  ~TempDir();
  TempDir(TempDir&& other) noexcept;
  TempDir& operator=(TempDir&& other) noexcept;  // removes the directory this one owned first
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  // The directory's absolute path ("" once moved from).
  const std::string& path() const { return path_; }

 private:
  void remove() noexcept;
  std::string path_;
};

// A fresh directory under $TMPDIR (or /tmp), named <prefix>-XXXXXX, as TempDir makes one, but
// owned by the caller: nothing removes it (std::filesystem::remove_all does). Prefer TempDir.
// Throws std::runtime_error as TempDir's constructor does.
std::string make_temp_dir(std::string_view prefix);

}  // namespace dlock::testing

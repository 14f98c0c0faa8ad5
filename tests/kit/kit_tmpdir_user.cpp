// dlock_kit_tmpdir_user DIR [--leak]
//
// A program that uses every object of the testing kit that makes files or directories, with
// TMPDIR=DIR (set first, before any thread exists): a TempDir (moved, too), a TestingServer
// (restarted once), a one-member TestingEnsemble, a PostgresServer, a hold log and a fenced
// resource in a TempDir, run_command (its output goes through a file in TMPDIR). It destroys them
// all and exits 0; TempDir.TheKitLeavesNothingInTmpdir then finds DIR empty. With --leak it makes
// a TempDir and calls make_temp_dir("leak"), leaving that directory as a caller that does not
// remove it would (and starts no server): the negative control. Prints the directory of each
// object; errors are printed, exit 1.
#include <stdlib.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <utility>

#include "dlock/testing/ensemble.hpp"
#include "dlock/testing/hold_log.hpp"
#include "dlock/testing/postgres.hpp"
#include "dlock/testing/process.hpp"
#include "dlock/testing/server.hpp"
#include "dlock/testing/temp_dir.hpp"
#include "spawn.hpp"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: dlock_kit_tmpdir_user DIR [--leak] | --noop\n");
    return 2;
  }
  if (std::strcmp(argv[1], "--noop") == 0) return 0;  // the command run_command runs below
  ::setenv("TMPDIR", argv[1], 1);
  const bool leak = argc > 2 && std::strcmp(argv[2], "--leak") == 0;
  using namespace dlock::testing;
  try {
    {
      TempDir moved("kit-moved");
      TempDir files(std::move(moved));
      std::printf("TempDir %s\n", files.path().c_str());
      HoldLogWriter writer(files.path() + "/holds.jsonl");
      writer.record({.client = "a#1", .session = "1", .mode = "exclusive", .token = 1024, .enter_ns = 1, .exit_ns = 2});
      fenced_write(files.path() + "/resource", "a#1", 1024, "value");
      TempDir replaced("kit-replaced");
      replaced = TempDir("kit-replacement");
    }
    if (leak) {
      std::printf("left %s\n", make_temp_dir("leak").c_str());
      return 0;
    }
    {
      TestingServer server;
      server.restart();
      std::printf("TestingServer %s\n", server.directory().c_str());
    }
    {
      TestingEnsemble ensemble(EnsembleOptions{.members = 1});
      std::printf("TestingEnsemble %s\n", ensemble.directory().c_str());
    }
    {
      PostgresServer postgres;
      postgres.execute("SELECT 1");
      std::printf("PostgresServer %s\n", postgres.directory().c_str());
    }
    const auto noop = run_command({executable_dir() + "/dlock_kit_tmpdir_user", "--noop"}, std::chrono::seconds(30));
    if (noop.status != 0) throw std::runtime_error("run_command: exit " + std::to_string(noop.status));
    return 0;
  } catch (const std::exception& e) {
    std::printf("%s\n", e.what());
    return 1;
  }
}

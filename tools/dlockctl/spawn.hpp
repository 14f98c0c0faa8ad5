// Starting the command that runs under a hold: fork and execvp, so that the exec's failure comes
// back as an errno (for exit statuses 126 and 127, as shells give them) instead of as a child
// that exited 127.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "signals.hpp"

namespace dlockctl {

struct Spawned {
  pid_t pid = -1;            // the command, or -1
  int error = 0;             // when pid is -1: the errno of what failed
  bool exec_failed = false;  // the exec failed (ENOENT: not found), not the fork before it
};

// The file descriptors open now, sorted. Called at dlockctl's start, before anything of its own
// is opened: those are the descriptors the command may inherit (stdin, stdout, stderr, and what a
// shell opened for it, as in `dlockctl ... 3>file`), and no others.
std::vector<int> open_descriptors();

// Starts `argv` (argv[0] looked up in PATH as execvp does, a file without `#!` run by /bin/sh)
// with dlockctl's environment plus `extra_env` ("NAME=value" each, replacing a variable of that
// name), in dlockctl's process group, with:
//   * of dlockctl's descriptors only those in `inherited` (sorted; open_descriptors() at the
//     start): never dlockctl's own, such as its ZooKeeper connection, which a command that
//     outlived dlockctl would otherwise keep open;
//   * the signal mask dlockctl started with (`signals`);
//   * SIGTERM as its parent-death signal: it gets SIGTERM if dlockctl dies first.
// When the exec fails no process is left behind. `argv` must not be empty.
Spawned spawn(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env,
              const std::vector<int>& inherited, const SignalWatch& signals);

}  // namespace dlockctl

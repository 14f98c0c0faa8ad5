// Internal: how a TestingEnsemble runs its members (dlock/testing/ensemble.hpp's EnsembleBackend).
// The ensemble is written once over this interface; each backend is one class:
//   * Process: a member is a child process of the test (its JVM); kill, stop, pause and resume
//     are signals to it;
//   * Docker: a member is a container on the host's network, its directory mounted at the same
//     path; they go through `docker rm -f / stop / pause / unpause`, and the pid the ensemble
//     keeps is its `docker run` client's.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "dlock/testing/ensemble.hpp"
#include "spawn.hpp"

namespace dlock::testing {

// One member as a runner sees it. `name` is the ensemble's unique name for it (the container's).
struct RunnerMember {
  std::string dir;  // its directory: zoo.cfg, data/, server.log
  std::string name;
  pid_t pid = -1;
  bool paused = false;
};

class MemberRunner {
 public:
  virtual ~MemberRunner() = default;
  // Starts ZooKeeper's main class `main_class` with `config`, the JVM given `jvm_options`, its
  // output appended to `spawn.log_file`; returns the pid to wait for.
  virtual pid_t start(const RunnerMember& member, const std::string& main_class, int container_check_ms,
                      const std::vector<std::string>& jvm_options, const SpawnOptions& spawn) = 0;
  // Ends the member at once (SIGKILL, `docker rm -f`) / gracefully (SIGTERM, `docker stop`), its
  // pid reaped; throws, with the engine's message, if the engine refuses.
  virtual void kill(const RunnerMember& member) = 0;
  virtual void stop(const RunnerMember& member) = 0;
  // Freezes and thaws the member's processes (SIGSTOP/SIGCONT, the cgroup freezer).
  virtual void pause(const RunnerMember& member) = 0;
  virtual void resume(const RunnerMember& member) = 0;
  // Ends every member, in parallel, whatever its state (paused ones too); none may outlive this.
  virtual void stop_all(const std::vector<RunnerMember>& members) = 0;
};

// The backend `options` names, checked: its programs exist (and, for Docker, the engine answers
// and has the image; containers of dead test processes are removed). Throws std::runtime_error
// naming what is missing and how to get it.
std::unique_ptr<MemberRunner> make_member_runner(const EnsembleOptions& options);

}  // namespace dlock::testing

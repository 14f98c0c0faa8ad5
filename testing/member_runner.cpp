#include "member_runner.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <sstream>
#include <stdexcept>

#include "dlock/testing/server.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;

class ProcessRunner final : public MemberRunner {
 public:
  explicit ProcessRunner(ZooKeeperInstall install) : install_(std::move(install)) { install_.check(); }

  pid_t start(const RunnerMember& member, const std::string& main_class, int container_check_ms,
              const std::vector<std::string>& jvm_options, const SpawnOptions& spawn) override {
    return spawn_child(
        zookeeper_command(install_, main_class, member.dir + "/zoo.cfg", container_check_ms, jvm_options), spawn);
  }
  void kill(const RunnerMember& member) override {
    ::kill(member.pid, SIGKILL);
    ::waitpid(member.pid, nullptr, 0);
  }
  void stop(const RunnerMember& member) override { stop_child(member.pid, SIGTERM, 5s); }
  void pause(const RunnerMember& member) override { ::kill(member.pid, SIGSTOP); }
  void resume(const RunnerMember& member) override { ::kill(member.pid, SIGCONT); }
  void stop_all(const std::vector<RunnerMember>& members) override {
    // SIGTERM to all first, so they shut down in parallel.
    for (const auto& member : members) {
      if (member.pid <= 0) continue;
      ::kill(member.pid, SIGCONT);
      ::kill(member.pid, SIGTERM);
    }
    for (const auto& member : members) stop(member);
  }

 private:
  ZooKeeperInstall install_;
};

class DockerRunner final : public MemberRunner {
 public:
  DockerRunner(std::string docker, std::string image) : docker_(std::move(docker)), image_(std::move(image)) {
    if (::access(docker_.c_str(), X_OK) != 0) {
      throw std::runtime_error("TestingEnsemble (Docker backend): no docker client at " + docker_ +
                               " (Debian: apt-get install docker.io)");
    }
    const char* host = std::getenv("DOCKER_HOST");
    const std::string where = host != nullptr && *host != '\0' ? std::string("DOCKER_HOST=") + host
                                                               : std::string("DOCKER_HOST unset: /var/run/docker.sock");
    std::string why;
    std::string output;
    if (run({"version"}, &output) != 0) {
      why = "no Docker engine answers (" + where + "; scripts/docker-engine.sh start runs one)";
    } else if (run({"image", "inspect", "--format", "{{.Id}}", image_}, &output) != 0) {
      why = "no image " + image_ + " on the engine at " + where +
            " (scripts/docker-engine.sh images builds dlock-zookeeper:debian)";
    }
    if (!why.empty()) {
      if (output.size() > 400) output = "..." + output.substr(output.size() - 400);
      throw std::runtime_error("TestingEnsemble (Docker backend): " + why + ": " + output);
    }
    remove_orphans();
  }

  pid_t start(const RunnerMember& member, const std::string& main_class, int container_check_ms,
              const std::vector<std::string>& jvm_options, const SpawnOptions& spawn) override {
    run({"rm", "-f", member.name});  // a container of an earlier start of this member, if left
    // Debian's ZooKeeper inside the image; the member's directory (zoo.cfg, data) at the same path
    // inside, so zoo.cfg's dataDir holds; the host's network, so the members and the clients meet
    // on the same loopback ports.
    auto command = zookeeper_command(ZooKeeperInstall::debian(), main_class, member.dir + "/zoo.cfg",
                                     container_check_ms, jvm_options);
    // As the caller's user, so the files it writes into the member's directory are the caller's.
    // No --rm: kill() and stop() remove the container themselves, before its name is used again.
    std::vector<std::string> argv{docker_,        "run",
                                  "--name",       member.name,
                                  "--network",    "host",
                                  "--label",      "dlock.testing.owner=" + std::to_string(::getpid()),
                                  "--user",       std::to_string(::getuid()) + ":" + std::to_string(::getgid()),
                                  "-v",           member.dir + ":" + member.dir,
                                  "--entrypoint", command.front(),
                                  image_};
    argv.insert(argv.end(), command.begin() + 1, command.end());
    return spawn_child(argv, spawn);
  }
  void kill(const RunnerMember& member) override {
    // A container's process is the engine's child, not ours: the engine kills and removes it (its
    // `docker run` client then exits and is reaped below).
    checked({"rm", "-f", member.name});
    ::kill(member.pid, SIGKILL);
    ::waitpid(member.pid, nullptr, 0);
  }
  void stop(const RunnerMember& member) override {
    if (member.pid > 0) {
      run({"stop", "-t", "5", member.name});  // SIGTERM, SIGKILL after 5 s
      checked({"rm", "-f", member.name});
    }
    stop_child(member.pid, SIGTERM, 5s);
  }
  void pause(const RunnerMember& member) override {
    checked({"pause", member.name});  // freezes the container's processes (cgroup freezer)
  }
  void resume(const RunnerMember& member) override {
    if (member.paused) checked({"unpause", member.name});
  }
  void stop_all(const std::vector<RunnerMember>& members) override {
    // One `docker rm -f` for all: they go in parallel, paused ones too. By name, whatever the
    // member's state here: none may outlive the ensemble.
    std::vector<std::string> args{"rm", "-f"};
    for (const auto& member : members) {
      if (!member.name.empty()) args.push_back(member.name);
    }
    if (args.size() > 2) run(args);
    for (const auto& member : members) stop_child(member.pid, SIGKILL, 1s);
  }

 private:
  // Runs `docker <args...>` and waits (at most 60 s, then throws); its exit code, and its output
  // if `output` is given.
  int run(const std::vector<std::string>& args, std::string* output = nullptr) const {
    std::vector<std::string> argv{docker_};
    argv.insert(argv.end(), args.begin(), args.end());
    // No docker command of ours takes a minute unless the engine hangs: then fail, not hang.
    auto result = run_command(argv, 60s);
    if (result.timed_out) {
      throw std::runtime_error("TestingEnsemble (Docker backend): `docker " + args.front() +
                               "` did not finish within 60 s (is the engine at DOCKER_HOST hung?)");
    }
    if (output != nullptr) *output = std::move(result.output);
    return result.status;
  }
  // The same; throws, with docker's message, unless it succeeded.
  void checked(const std::vector<std::string>& args) const {
    std::string output;
    if (run(args, &output) == 0) return;
    std::string command = "docker";
    for (const auto& arg : args) command += " " + arg;
    if (output.size() > 600) output = "..." + output.substr(output.size() - 600);
    throw std::runtime_error("TestingEnsemble (Docker backend): `" + command + "` failed: " + output);
  }
  // Removes the containers of ensembles whose test process died without its destructors (a crash,
  // SIGKILL): the kernel killed their `docker run` clients, not the containers. Each carries its
  // owner's PID (label dlock.testing.owner).
  void remove_orphans() const {
    std::string listing;
    if (run({"ps", "-a", "--filter", "label=dlock.testing.owner", "--format",
             "{{.ID}} {{.Label \"dlock.testing.owner\"}}"},
            &listing) != 0) {
      return;
    }
    std::istringstream lines(listing);
    std::string id;
    long owner = 0;
    while (lines >> id >> owner) {
      if (owner > 0 && ::kill(static_cast<pid_t>(owner), 0) != 0 && errno == ESRCH) run({"rm", "-f", id});
    }
  }

  const std::string docker_, image_;
};

}  // namespace

std::unique_ptr<MemberRunner> make_member_runner(const EnsembleOptions& options) {
  if (options.backend == EnsembleBackend::Docker) {
    return std::make_unique<DockerRunner>(options.docker, options.docker_image);
  }
  return std::make_unique<ProcessRunner>(options.install);
}

}  // namespace dlock::testing

// with_zookeeper COMMAND [ARG...]: runs COMMAND beside a real ZooKeeper server and exits with its
// status. The docs' snippets run against that server (tests/docs/snippets.py).
//
// The server is the testing kit's TestingServer: a fresh data directory, a free loopback port,
// named to COMMAND in DLOCK_SNIPPET_SERVER ("127.0.0.1:<port>"). It is stopped, and its directory
// removed, when COMMAND ends whatever its outcome; SIGINT and SIGTERM are passed on to COMMAND so
// that this happens then too; under SIGKILL the kernel kills both (PR_SET_PDEATHSIG).
#include <signal.h>
#include <stdlib.h>

#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "dlock/testing/server.hpp"
#include "spawn.hpp"

namespace {

volatile sig_atomic_t command_pid = 0;

void pass_on(int signal) {
  if (command_pid > 0) ::kill(command_pid, signal);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argv[1][0] != '/') {
    std::fprintf(stderr, "usage: with_zookeeper /absolute/command [arg...]\n");
    return 2;
  }
  try {
    dlock::testing::TestingServer server;
    // Set before the child exists and while this process has no other thread.
    ::setenv("DLOCK_SNIPPET_SERVER", server.connect_string().c_str(), 1);
    struct sigaction action = {};
    action.sa_handler = pass_on;
    action.sa_flags = SA_RESTART;  // the wait below goes on until the command has exited
    ::sigaction(SIGINT, &action, nullptr);
    ::sigaction(SIGTERM, &action, nullptr);
    const pid_t pid = dlock::testing::spawn_child(std::vector<std::string>(argv + 1, argv + argc));
    command_pid = pid;
    const int status = dlock::testing::wait_child(pid);
    command_pid = 0;
    return status;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "with_zookeeper: %s\n", e.what());
    return 2;
  }
}

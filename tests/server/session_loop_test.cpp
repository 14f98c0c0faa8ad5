// The session's ZooKeeper loop (src/session/handle_loop.hpp): the C client's single-threaded
// library driven by one thread of dlock's per Session, and what that buys: a forked child can
// make a Session of its own.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "dlock/dlock.hpp"
#include "test_env.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;

// The ids of this process's threads.
std::set<std::string> thread_ids() {
  std::set<std::string> ids;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) {
    ids.insert(entry.path().filename().string());
  }
  return ids;
}

std::string thread_name(const std::string& id) {
  std::ifstream comm("/proc/self/task/" + id + "/comm");
  std::string name;
  std::getline(comm, name);
  return name;
}

TEST(SessionLoop, ASessionDrivesItsHandleOnOneThreadOfItsOwn) {
  {
    // The process-wide task timer, started once by the first lock: not a Session's thread.
    Session warm(session_options(4s));
    Mutex lock(warm, test_root() + "/warm");
    lock.lock();
    lock.unlock();
  }
  const auto before = thread_ids();
  Session session(session_options(4s));
  Mutex lock(session, test_root() + "/loop");
  lock.lock();
  lock.unlock();
  std::multiset<std::string> added;  // their names
  for (const auto& id : thread_ids()) {
    if (before.count(id) == 0) added.insert(thread_name(id));
  }
  // The loop and the supervisor (the janitor's retries are timers on the loop). The
  // multi-threaded C client added two of its own (I/O and completion) where the loop is now, and
  // the janitor had a thread: four in all.
  EXPECT_EQ(added.size(), 2u);
  EXPECT_EQ(added.count("dlock-zk"), 1u) << "no thread named dlock-zk among the Session's";
}

// A child forked from a process with a Session (and its loop thread running) makes a Session of
// its own and locks with it. The parent's Session, with a hold it kept across the fork, is
// untouched. The child leaves with _exit: the parent's Session is not the child's to destroy.
TEST(SessionLoop, AForkedChildMakesASessionOfItsOwnAndLocks) {
  Session parent(session_options(4s));
  const std::string held = test_root() + "/held";
  const std::string child_path = test_root() + "/child";
  Mutex parent_lock(parent, held);
  parent_lock.lock();

  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0) << "fork failed";
  if (pid == 0) {
    int code = 0;
    try {
      Session own(session_options(4s));
      Mutex lock(own, child_path);
      if (!lock.try_lock_for(10s)) code = 2;
      if (code == 0) lock.unlock();
      // The parent's hold is seen from the child's own session: it cannot take that lock.
      Mutex parents(own, held);
      if (code == 0 && parents.try_lock_for(200ms)) code = 3;
    } catch (...) {
      code = 4;
    }
    ::_exit(code);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "the child did not exit (signal " << WTERMSIG(status) << ")";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "2: no lock within 10 s; 3: took the parent's held lock; 4: threw";

  EXPECT_EQ(parent.state(), SessionState::Connected);
  parent_lock.unlock();
  Mutex again(parent, child_path);
  EXPECT_TRUE(again.try_lock_for(10s));
  again.unlock();
}

}  // namespace
}  // namespace dlock::testing

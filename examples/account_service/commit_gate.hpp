// Debug (--hold-before-commit N): the first N logins to reach COMMIT wait there until a line, or
// the end, of standard input. A test that stalls an instance mid-login uses it to know that the
// logins are all between their inserts and COMMIT when it stalls the instance, and to choose when
// they commit, rather than widen the window with a sleep and hope they all fall into it.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>

namespace account_service {

class CommitGate {
 public:
  // `held` == 0: a gate that never holds, and standard input is not read. Otherwise a detached
  // thread reads standard input until its first line or its end, then opens the gate.
  explicit CommitGate(int held);
  CommitGate(const CommitGate&) = delete;
  CommitGate& operator=(const CommitGate&) = delete;

  // Blocks the first `held` callers until the gate opens; returns at once for the others, and
  // for everyone once it is open. Thread-safe.
  void pass() const;

 private:
  struct State {
    std::mutex mutex;
    std::condition_variable opened;
    int left = 0;  // callers still to hold
    bool open = false;
  };
  // Shared with the reader thread, which may outlive the gate (it is blocked in a read).
  std::shared_ptr<State> state_;
};

}  // namespace account_service

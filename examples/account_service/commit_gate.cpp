#include "commit_gate.hpp"

#include <iostream>
#include <string>
#include <thread>

namespace account_service {

CommitGate::CommitGate(int held) : state_(std::make_shared<State>()) {
  state_->left = held;
  if (held == 0) return;
  std::thread([state = state_] {
    std::string line;
    std::getline(std::cin, line);  // a line, the end of input or an error: the gate opens
    {
      std::lock_guard lock(state->mutex);
      state->open = true;
    }
    state->opened.notify_all();
  }).detach();
}

void CommitGate::pass() const {
  std::unique_lock lock(state_->mutex);
  if (state_->left == 0) return;
  --state_->left;
  state_->opened.wait(lock, [&] { return state_->open; });
}

}  // namespace account_service

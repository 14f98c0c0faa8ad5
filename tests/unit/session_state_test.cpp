// The session's state machine (src/session/state.hpp) and the handles behind it: an event of a
// handle the supervisor has replaced since (delivered late, after the swap) must not move the
// state of its successor's session. A successor declared Lost for nothing signals its holds and
// opens a third session; declared Suspended, it signals them under LossSignal::OnSuspended.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>

#include "src/session/state.hpp"

namespace dlock::detail {
namespace {

class SessionStateMachine : public ::testing::Test {
 protected:
  // Handle 1 connected, expired, and was replaced by handle 2, which connected.
  void replace_first_handle() {
    ASSERT_TRUE(states.move(SessionState::Connected, std::nullopt, 1));
    ASSERT_TRUE(states.move(SessionState::Lost, std::nullopt, 1));
    generation = 2;
    ASSERT_TRUE(states.move(SessionState::Connected, std::nullopt, 2));
  }

  std::atomic<std::uint64_t> generation{1};
  StateMachine states{generation};
};

TEST_F(SessionStateMachine, ALateLossOfAReplacedHandleDoesNotEndItsSuccessor) {
  replace_first_handle();
  EXPECT_FALSE(states.move(SessionState::Lost, std::nullopt, 1));
  EXPECT_EQ(states.state(), SessionState::Connected);
  // Control: the current handle's loss is one.
  EXPECT_TRUE(states.move(SessionState::Lost, std::nullopt, 2));
  EXPECT_EQ(states.state(), SessionState::Lost);
}

TEST_F(SessionStateMachine, ALateDisconnectionOfAReplacedHandleDoesNotSuspendItsSuccessor) {
  replace_first_handle();
  EXPECT_FALSE(states.move(SessionState::Suspended, std::nullopt, 1));
  EXPECT_EQ(states.state(), SessionState::Connected);
  EXPECT_TRUE(states.move(SessionState::Suspended, std::nullopt, 2));  // control
}

TEST_F(SessionStateMachine, ALossToldTwiceIsOneMove) {
  ASSERT_TRUE(states.move(SessionState::Connected, std::nullopt, 1));
  EXPECT_TRUE(states.move(SessionState::Lost, std::nullopt, 1));
  EXPECT_FALSE(states.move(SessionState::Lost, std::nullopt, 1)) << "a second renewal would replace the successor";
  EXPECT_EQ(states.changes(), 2u);
}

}  // namespace
}  // namespace dlock::detail

// Fencing tokens strictly increase from holder to holder, across sessions.
#include <gtest/gtest.h>

#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "dlock/dlock.hpp"
#include "raw_zk.hpp"
#include "test_env.hpp"

namespace dlock::testing {
namespace {

TEST(Fencing, TokensStrictlyIncreaseOverOneHundredHoldersFromFourSessions) {
  constexpr int kSessions = 4, kHoldsEach = 25;
  std::vector<std::unique_ptr<Session>> sessions;
  for (int i = 0; i < kSessions; ++i) sessions.push_back(std::make_unique<Session>(session_options()));
  std::vector<std::int64_t> tokens;  // appended inside the critical section: in hold order
  std::vector<std::thread> threads;
  for (auto& session : sessions) {
    threads.emplace_back([&, s = session.get()] {
      Mutex mutex(*s, test_root());
      for (int i = 0; i < kHoldsEach; ++i) {
        std::scoped_lock guard(mutex);
        tokens.push_back(mutex.fencing_token());
      }
    });
  }
  for (auto& thread : threads) thread.join();
  ASSERT_EQ(tokens.size(), static_cast<std::size_t>(kSessions * kHoldsEach));
  for (std::size_t i = 1; i < tokens.size(); ++i) {
    EXPECT_LT(tokens[i - 1], tokens[i]) << "holder " << i << " got a token not above its predecessor's";
  }
}

TEST(Fencing, TheFirstHoldsTokenIsTheCreationZxidOfItsNodeTimes1024) {
  Session session(session_options());
  Mutex mutex(session, test_root());
  std::scoped_lock guard(mutex);
  RawZk zk(zk_connect());
  const auto stat = zk.stat(test_root() + "/" + mutex.participants().at(0));
  ASSERT_TRUE(stat.has_value());
  EXPECT_EQ(mutex.fencing_token(), fencing_token_of(stat->czxid));
}

}  // namespace
}  // namespace dlock::testing

// Failure, the library's error as a value: every exception the blocking API throws survives the
// trip (its type, code and message), and a foreign exception comes back as itself.
#include "src/base/failure.hpp"

#include <gtest/gtest.h>
#include <zookeeper/zookeeper.h>

#include <new>
#include <optional>
#include <stdexcept>
#include <system_error>
#include <typeinfo>

#include "dlock/dlock.hpp"

namespace dlock::testing {
namespace {

using detail::Failure;

// Throws `original`, turns it into a Failure in the catch block, raises that, and returns what
// was raised (as the exception_ptr a caller would catch).
template <class E>
std::exception_ptr round_trip(const E& original) {
  std::optional<Failure> failure;
  try {
    throw original;
  } catch (...) {
    failure = Failure::current();
  }
  try {
    failure->raise();
  } catch (...) {
    return std::current_exception();
  }
  return nullptr;
}

template <class Expected, class E>
void expect_same(const E& original) {
  const auto raised = round_trip(original);
  try {
    std::rethrow_exception(raised);
  } catch (const Expected& e) {
    EXPECT_EQ(typeid(e), typeid(original)) << "the type changed on the way";
    EXPECT_EQ(e.code(), original.code());
    EXPECT_STREQ(e.what(), original.what());
  } catch (...) {
    ADD_FAILURE() << "raised something else than " << typeid(Expected).name();
  }
}

TEST(Failure, EveryDlockExceptionKeepsItsTypeCodeAndMessage) {
  expect_same<LockLost>(LockLost(std::error_code(ZSESSIONEXPIRED, zookeeper_category()), "lock /a: lost"));
  expect_same<ConnectError>(ConnectError(make_error_code(errc::disconnected), "no server answered"));
  expect_same<NotOwner>(NotOwner("not the owner of /a"));
  expect_same<InvalidPath>(InvalidPath("path \"a\" is not absolute"));
  expect_same<WouldDeadlock>(WouldDeadlock("would wait on itself"));
  expect_same<InvalidKey>(InvalidKey("key too long"));
  expect_same<LockTimeout>(LockTimeout("not granted within 5 ms"));
  expect_same<LockTimeout>(LockTimeout(make_error_code(errc::disconnected), "no connection for 5 ms"));
  expect_same<Error>(Error(make_error_code(errc::token_exhausted), "czxid too large"));
  expect_same<Error>(Error(std::error_code(ZNOAUTH, zookeeper_category()), "not authorized"));
}

TEST(Failure, OutOfMemoryIsBadAllocAndAForeignExceptionComesBackAsItself) {
  EXPECT_THROW(std::rethrow_exception(round_trip(std::bad_alloc())), std::bad_alloc);
  const auto foreign = round_trip(std::out_of_range("index 7"));
  try {
    std::rethrow_exception(foreign);
  } catch (const std::out_of_range& e) {
    EXPECT_STREQ(e.what(), "index 7");
  } catch (...) {
    ADD_FAILURE() << "a foreign exception changed type";
  }
  try {
    throw std::out_of_range("index 7");
  } catch (...) {
    const auto failure = Failure::current();
    EXPECT_EQ(failure.kind(), Failure::Kind::Foreign);
    EXPECT_EQ(failure.message(), "index 7");
  }
}

TEST(Failure, AForeignSystemErrorKeepsItsCodeForTheAsynchronousHandlers) {
  const std::system_error thread_failure(std::make_error_code(std::errc::resource_unavailable_try_again), "thread");
  try {
    throw thread_failure;
  } catch (...) {
    const auto failure = Failure::current();
    EXPECT_EQ(failure.kind(), Failure::Kind::Foreign);
    EXPECT_EQ(failure.code(), std::make_error_code(std::errc::resource_unavailable_try_again));
    const Failure copy = failure;  // shares the message: a copy never throws
    EXPECT_EQ(&copy.message(), &failure.message());
  }
  try {
    std::rethrow_exception(round_trip(thread_failure));
  } catch (const std::system_error& e) {
    EXPECT_EQ(typeid(e), typeid(std::system_error));
    EXPECT_EQ(e.code(), thread_failure.code());
  }
}

TEST(Failure, OfReadsTheDynamicType) {
  const Error& as_base = LockLost(make_error_code(errc::lock_lost), "gone");
  const auto failure = Failure::of(as_base);
  EXPECT_EQ(failure.kind(), Failure::Kind::LockLost);
  EXPECT_EQ(failure.code(), make_error_code(errc::lock_lost));
  EXPECT_EQ(failure.message(), "gone");
}

}  // namespace
}  // namespace dlock::testing

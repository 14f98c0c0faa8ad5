// Internal: an error as a value.
//
// Inside the library an error crosses a completion or a layer as a Failure (an AcquireOp's result,
// a take's, a held lock's, a cancel's reason), never as an exception in flight. Only the public
// surface turns it into what its caller expects: the blocking functions throw raise(), the
// asynchronous ones hand code() to the handler (async_lock.cpp), and metrics read kind() and code().
//
// A Failure keeps what the exception dlock would have thrown says: its type (Kind), its code and
// its message. An exception that is no dlock error and no std::bad_alloc (from a dependency, say)
// is kept as it is (with its code, if it is a std::system_error), and raise() throws it again
// unchanged.
//
// Copies never throw (the message is shared, as an exception's is), so a Failure can be passed
// on, stored under a mutex or copied in a noexcept function as the std::exception_ptr it replaces
// could. The public constructor allocates the message; of() and current() never throw and, out
// of memory, keep the kind and the code only.
//
// Thread-safety: a value; copies are independent (the shared message is immutable).
#pragma once

#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <type_traits>

namespace dlock {
class Error;
}  // namespace dlock

namespace dlock::detail {

class Failure {
 public:
  // Which dlock exception it is (dlock/error.hpp); OutOfMemory is std::bad_alloc, Foreign anything
  // else.
  enum class Kind {
    Error,
    ConnectError,
    LockLost,
    NotOwner,
    InvalidPath,
    WouldDeadlock,
    InvalidKey,
    LockTimeout,
    OutOfMemory,
    Foreign
  };

  Failure(Kind kind, std::error_code code, std::string message)
      : kind_(kind), code_(code), message_(std::make_shared<const std::string>(std::move(message))) {}

  // The failure of the exception being handled: call it in a catch block only.
  static Failure current() noexcept;
  // The failure `error` stands for (by its dynamic type).
  static Failure of(const Error& error) noexcept;

  Kind kind() const noexcept { return kind_; }
  const std::error_code& code() const noexcept { return code_; }
  const std::string& message() const noexcept { return message_ ? *message_ : empty(); }

  // Throws the exception it stands for: the dlock type of its kind, with its code and message.
  [[noreturn]] void raise() const;

 private:
  Failure(Kind kind, std::error_code code) noexcept : kind_(kind), code_(code) {}
  static const std::string& empty() noexcept;

  Kind kind_;
  std::error_code code_;
  std::shared_ptr<const std::string> message_;  // null: no message (made without memory)
  std::exception_ptr foreign_;                  // Kind::Foreign: the exception itself
};

static_assert(std::is_nothrow_copy_constructible_v<Failure> && std::is_nothrow_copy_assignable_v<Failure>);

// The failure `step` throws, or nullopt when it returns: a step written with the throwing helpers
// (lock_errors.hpp throws what the blocking call would) run where a value must cross instead.
template <class Step>
std::optional<Failure> failure_of(Step&& step) noexcept {
  try {
    step();
    return std::nullopt;
  } catch (...) {
    return Failure::current();
  }
}

}  // namespace dlock::detail

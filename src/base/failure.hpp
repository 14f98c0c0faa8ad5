// Internal: an error as a value.
//
// Inside the library an error crosses a completion or a layer as a Failure (an AcquireOp's result,
// a take's, a held lock's, a cancel's reason), never as an exception in flight. Only the public
// surface turns it into what its caller expects: the blocking functions throw raise(), the
// asynchronous ones hand code() to the handler (async_lock.cpp), and metrics read code().
//
// A Failure keeps what the exception dlock would have thrown says: its type (Kind), its code and
// its message. An exception that is no dlock error and no std::bad_alloc (from a dependency, say)
// is kept as it is, and raise() throws it again unchanged.
//
// Thread-safety: a value; copies are independent.
#pragma once

#include <exception>
#include <string>
#include <system_error>

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
      : kind_(kind), code_(code), message_(std::move(message)) {}

  // The failure of the exception being handled: call it in a catch block only.
  static Failure current() noexcept;
  // The failure `error` stands for (by its dynamic type).
  static Failure of(const Error& error) noexcept;

  Kind kind() const noexcept { return kind_; }
  const std::error_code& code() const noexcept { return code_; }
  const std::string& message() const noexcept { return message_; }

  // Throws the exception it stands for: the dlock type of its kind, with its code and message.
  [[noreturn]] void raise() const;

 private:
  Kind kind_;
  std::error_code code_;
  std::string message_;
  std::exception_ptr foreign_;  // Kind::Foreign: the exception itself
};

}  // namespace dlock::detail

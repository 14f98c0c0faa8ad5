#include "src/base/failure.hpp"

#include <new>

#include "dlock/error.hpp"

namespace dlock::detail {

Failure Failure::of(const Error& e) noexcept {
  try {
    const auto kind = dynamic_cast<const LockLost*>(&e)        ? Kind::LockLost
                      : dynamic_cast<const ConnectError*>(&e)  ? Kind::ConnectError
                      : dynamic_cast<const NotOwner*>(&e)      ? Kind::NotOwner
                      : dynamic_cast<const InvalidPath*>(&e)   ? Kind::InvalidPath
                      : dynamic_cast<const WouldDeadlock*>(&e) ? Kind::WouldDeadlock
                      : dynamic_cast<const InvalidKey*>(&e)    ? Kind::InvalidKey
                      : dynamic_cast<const LockTimeout*>(&e)   ? Kind::LockTimeout
                                                               : Kind::Error;
    return {kind, e.code(), e.what()};
  } catch (...) {  // the message could not be copied
    return {Kind::OutOfMemory, std::make_error_code(std::errc::not_enough_memory), std::string()};
  }
}

Failure Failure::current() noexcept {
  try {
    throw;
  } catch (const Error& e) {
    return of(e);
  } catch (const std::bad_alloc&) {
    return {Kind::OutOfMemory, std::make_error_code(std::errc::not_enough_memory), "out of memory"};
  } catch (...) {
    Failure foreign(Kind::Foreign, std::make_error_code(std::errc::state_not_recoverable), std::string());
    foreign.foreign_ = std::current_exception();
    try {
      throw;
    } catch (const std::exception& e) {
      try {
        foreign.message_ = e.what();
      } catch (...) {  // out of memory: the exception itself is kept all the same
      }
    } catch (...) {
    }
    return foreign;
  }
}

void Failure::raise() const {
  switch (kind_) {
    case Kind::LockLost:
      throw LockLost(code_, message_);
    case Kind::ConnectError:
      throw ConnectError(code_, message_);
    case Kind::NotOwner:
      throw NotOwner(message_);
    case Kind::InvalidPath:
      throw InvalidPath(message_);
    case Kind::WouldDeadlock:
      throw WouldDeadlock(message_);
    case Kind::InvalidKey:
      throw InvalidKey(message_);
    case Kind::LockTimeout:
      throw LockTimeout(code_, message_);
    case Kind::OutOfMemory:
      throw std::bad_alloc();
    case Kind::Foreign:
      if (foreign_) std::rethrow_exception(foreign_);
      break;
    case Kind::Error:
      break;
  }
  throw Error(code_, message_);
}

}  // namespace dlock::detail

#include "src/base/failure.hpp"

#include <new>

#include "dlock/error.hpp"

namespace dlock::detail {

const std::string& Failure::empty() noexcept {
  static const std::string none;
  return none;
}

Failure Failure::of(const Error& e) noexcept {
  const auto kind = dynamic_cast<const LockLost*>(&e)        ? Kind::LockLost
                    : dynamic_cast<const ConnectError*>(&e)  ? Kind::ConnectError
                    : dynamic_cast<const NotOwner*>(&e)      ? Kind::NotOwner
                    : dynamic_cast<const InvalidPath*>(&e)   ? Kind::InvalidPath
                    : dynamic_cast<const WouldDeadlock*>(&e) ? Kind::WouldDeadlock
                    : dynamic_cast<const InvalidKey*>(&e)    ? Kind::InvalidKey
                    : dynamic_cast<const LockTimeout*>(&e)   ? Kind::LockTimeout
                                                             : Kind::Error;
  try {
    return {kind, e.code(), e.what()};
  } catch (...) {  // no memory for the message: the kind and the code are kept
    return Failure(kind, e.code());
  }
}

Failure Failure::current() noexcept {
  try {
    throw;
  } catch (const Error& e) {
    return of(e);
  } catch (const std::bad_alloc&) {
    return Failure(Kind::OutOfMemory, std::make_error_code(std::errc::not_enough_memory));
  } catch (...) {
    // Anything else is raised again as itself; a std::system_error (from std::thread, say) keeps
    // its code for the asynchronous handlers.
    Failure foreign(Kind::Foreign, std::make_error_code(std::errc::state_not_recoverable));
    foreign.foreign_ = std::current_exception();
    try {
      throw;
    } catch (const std::system_error& e) {
      foreign.code_ = e.code();
      try {
        foreign.message_ = std::make_shared<const std::string>(e.what());
      } catch (...) {
      }
    } catch (const std::exception& e) {
      try {
        foreign.message_ = std::make_shared<const std::string>(e.what());
      } catch (...) {
      }
    } catch (...) {
    }
    return foreign;
  }
}

void Failure::raise() const {
  switch (kind_) {
    case Kind::LockLost:
      throw LockLost(code_, message());
    case Kind::ConnectError:
      throw ConnectError(code_, message());
    case Kind::NotOwner:
      throw NotOwner(message());
    case Kind::InvalidPath:
      throw InvalidPath(message());
    case Kind::WouldDeadlock:
      throw WouldDeadlock(message());
    case Kind::InvalidKey:
      throw InvalidKey(message());
    case Kind::LockTimeout:
      throw LockTimeout(code_, message());
    case Kind::OutOfMemory:
      throw std::bad_alloc();
    case Kind::Foreign:
      if (foreign_) std::rethrow_exception(foreign_);
      break;
    case Kind::Error:
      break;
  }
  throw Error(code_, message());
}

}  // namespace dlock::detail

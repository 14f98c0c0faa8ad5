#include "dlock/error.hpp"

#include <zookeeper/zookeeper.h>

namespace dlock {
namespace {

class DlockCategory final : public std::error_category {
 public:
  const char* name() const noexcept override { return "dlock"; }
  std::string message(int value) const override {
    switch (static_cast<errc>(value)) {
      case errc::connect_failed:
        return "could not connect to ZooKeeper";
      case errc::lock_lost:
        return "lock lost: the session is gone";
      case errc::not_owner:
        return "the calling thread does not own the lock";
      case errc::invalid_path:
        return "invalid lock path";
      case errc::invalid_argument:
        return "invalid argument";
      case errc::would_deadlock:
        return "the request would deadlock";
      case errc::invalid_key:
        return "invalid lock key";
      case errc::lock_timeout:
        return "timed out waiting for the lock";
      case errc::lock_destroyed:
        return "the lock object was destroyed while this thread waited on it";
      case errc::disconnected:
        return "the session was disconnected from ZooKeeper";
      case errc::sequence_exhausted:
        return "the lock directory's sequence counter ran out";
      case errc::token_exhausted:
        return "the lock node's zxid is too large for a fencing token";
      case errc::not_authorized:
        return "the session's identity lacks a permission on a lock node";
      case errc::cancelled:
        return "the asynchronous acquisition was cancelled";
      case errc::stale_token:
        return "the resource has seen a newer fencing token";
      case errc::database_failed:
        return "the fenced resource's database failed the request";
      case errc::fence_ahead_of_ensemble:
        return "the fenced resource has recorded a token from another ZooKeeper history";
    }
    return "unknown dlock error " + std::to_string(value);
  }
};

class ZooKeeperCategory final : public std::error_category {
 public:
  const char* name() const noexcept override { return "zookeeper"; }
  std::string message(int value) const override { return zerror(value); }
};

}  // namespace

const std::error_category& dlock_category() noexcept {
  static const DlockCategory category;
  return category;
}

const std::error_category& zookeeper_category() noexcept {
  static const ZooKeeperCategory category;
  return category;
}

}  // namespace dlock

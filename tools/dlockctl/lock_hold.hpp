// `dlockctl lock` and `read-lock`: a dlock::LockHandle as a Hold (hold.hpp), taken so that a
// signal or --timeout-ms ends the wait with the node deleted.
#pragma once

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <optional>
#include <string>
#include <variant>

#include "dlock/lock_handle.hpp"
#include "hold.hpp"
#include "signals.hpp"

namespace dlockctl {

class LockHold final : public Hold {
 public:
  explicit LockHold(dlock::LockHandle handle);
  std::string_view kind() const override;
  // Kept after release(), for the messages that follow it.
  const std::string& path() const override { return path_; }
  const std::string& node() const override { return node_; }
  std::int64_t fencing_token() const override { return token_; }
  std::stop_token stop_token() const override { return handle_.stop_token(); }
  void release() noexcept override;

 private:
  dlock::LockHandle handle_;
  dlock::LockMode mode_;
  std::string path_;
  std::string node_;
  std::int64_t token_;
};

// Queues for `path` in `mode` (Exclusive: Curator's InterProcessMutex; Read: the read side of its
// InterProcessReadWriteLock) and waits until granted, at most `timeout` (nullopt: no limit), on
// `io`. Returns the hold; or, with none, dlockctl's exit status, its node's delete answered first:
// kWaitTimedOut, or kSignalBase + N when signal N (SIGINT, SIGTERM, SIGHUP) stopped the wait.
// Throws CommandError(kNotStarted) when the acquisition fails.
std::variant<LockHold, int> acquire_lock(dlock::Session& session, const std::string& path, dlock::LockMode mode,
                                         std::optional<std::chrono::milliseconds> timeout, SignalWatch& signals,
                                         boost::asio::io_context& io);

}  // namespace dlockctl

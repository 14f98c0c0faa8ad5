// dlockctl's commands, each on an open Session. Each prints its result (text, or one JSON
// document with --json) on stdout and returns an exit code (exit_codes.hpp); failures throw
// (dlock::Error from the library, CommandError for the tool's own rules).
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

#include "dlock/session.hpp"
#include "exit_codes.hpp"

namespace dlockctl {

// A failure with its exit code and a message naming the value and the rule.
class CommandError : public std::runtime_error {
 public:
  CommandError(ExitCode code, const std::string& what) : std::runtime_error(what), code_(code) {}
  ExitCode code() const noexcept { return code_; }

 private:
  ExitCode code_;
};

// The lock directories under `base` (recursively; `base` itself included) that have contenders.
int list_locks(dlock::Session& session, const std::string& base, bool json);
// The queue of `path` in order.
int show_lock(dlock::Session& session, const std::string& path, bool json);
// Returns kOk once no contender is queued on `path`, kTimedOut if `timeout_ms` passes first
// (nullopt: no limit).
int wait_free(dlock::Session& session, const std::string& path, std::optional<std::int64_t> timeout_ms, bool json);
// Prints the queue of `path` now and again each time its contenders change (text, or one JSON
// document per line with --json), until `timeout_ms` passes or `updates` updates are printed
// (nullopt: no limit; stop it with Ctrl-C). Returns kOk.
int watch_lock(dlock::Session& session, const std::string& path, std::optional<std::int64_t> timeout_ms,
               std::optional<std::int64_t> updates, bool json);
// Deletes contender `node` of `path` (someone else's node). The caller has checked the flags.
int force_release(dlock::Session& session, const std::string& path, const std::string& node, bool json);
// Asks the holder of lock node `node` (a full path) to give it up, in Curator's wire format
// (dlock::revoke): only a holder that listens (dlockctl --revocable, a RevocationWatch, Curator's
// makeRevocable) acts on it. A node that no longer exists is no error (its holder has gone).
int revoke_node(dlock::Session& session, const std::string& node, bool json);

// The warning `release` always prints on stderr.
inline constexpr const char* kReleaseWarning =
    "dlockctl: WARNING: deleting another client's lock node does not stop that client. If it is "
    "still running, it keeps working as the holder while the next waiter is granted the lock: "
    "only a resource that checks fencing tokens (dlock/fencing.hpp) rejects the old holder's "
    "writes. Remove only a holder you know to be dead or hung.\n";

}  // namespace dlockctl

// Internal: which lock nodes each holder holds, process-wide, so that a holder about to wait on
// one of them gets WouldDeadlock instead of waiting on itself forever. A holder is a thread
// (this_thread_token) or an asynchronous acquisition's owner (new_token). The layers above (the
// hold table, the scope guards) fill it; the queue (AcquireOp) and the hand-off (Cohort) consult
// it through one check and one message.
//
// A thread can reach the same lock directory through many doors: a Mutex and a SharedMutex side,
// a scope guard, a second Session to the same ensemble (whose connect string may be spelled
// differently). Node names carry a random per-attempt prefix, so a name recorded here identifies
// one node of one ensemble whichever Session lists it; they are recorded by name (the last path
// component), so that Sessions with different chroots match too. Holds that belong to a holder
// (Mutex, SharedMutex, scope guards until they are released) are recorded; LockHandles are not:
// they belong to no one, and waiting for one that another thread may release is legitimate.
//
// Threads are identified by a token that is never reused (std::thread::id values are, once a
// thread has been joined).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dlock/error.hpp"

namespace dlock::detail::held_nodes {

// A token no thread or holder has: the identity of a holder that is not a thread (an asynchronous
// acquisition's owner).
std::uint64_t new_token();

// The calling thread's token.
std::uint64_t this_thread_token();

// `node` (a full path, or a name) is held by the thread with `token`. Several threads may hold
// one node at once (readers sharing a read node through local hand-off), and one thread may hold
// it more than once (a Mutex and a scope guard): each add() needs its own remove().
// `still_owned` (if given) tells whether the node is still its session's: a hold whose session
// expired or closed blocks nobody for ever (the server deletes its node), so the queries below
// skip it. It runs under this registry's mutex: it must not block or take a lock.
void add(std::string_view node, std::uint64_t token, std::function<bool()> still_owned = {});
// One add(node, token) is undone (released, or lost and forgotten). No-op if not recorded.
void remove(std::string_view node, std::uint64_t token);
// Whether the calling thread holds the node named `name` (a path's last component), still owned.
bool held_by_this_thread(std::string_view name);
// Whether the holder with `token` holds it (an acquisition that runs on other threads than its
// caller's asks with the token it was started with). False for token 0.
bool held_by(std::string_view name, std::uint64_t token);
// WouldDeadlock for a holder about to wait for a node of lock `dir` while it holds `node` (a full
// path) ahead of it: the one message of every such refusal.
WouldDeadlock would_wait_on_itself(const std::string& dir, std::string_view node);

// Whether the holder with `token` holds any node at all (cheap when nobody holds one). False for
// token 0.
bool holds_any(std::uint64_t token);

// The names of the nodes the holder with `token` holds (still owned), sorted, at most `limit` of
// them; nullopt when it holds more (the list would not be the whole truth). Empty for token 0.
// What a lock node's data says its creator held when it queued (holder_info.hpp).
std::optional<std::vector<std::string>> names_held_by(std::uint64_t token, std::size_t limit);

}  // namespace dlock::detail::held_nodes

// Internal: the identity of one lock path on one session.
//
// Every Mutex on the same (session, path) shares one LockSite, so a thread re-entering the path
// through another Mutex object finds its hold (hold_table.hpp). Ids come from a process-wide
// counter and are never reused, so two sessions (or a session and its successor) never share one.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "client.hpp"

namespace dlock::detail {

struct LockSite {
  LockSite(std::uint64_t id_, std::string path_, std::shared_ptr<Client> client_)
      : id(id_), path(std::move(path_)), client(std::move(client_)) {}
  ~LockSite() { client->forget_site(path); }
  LockSite(const LockSite&) = delete;
  LockSite& operator=(const LockSite&) = delete;

  const std::uint64_t id;
  const std::string path;  // the lock directory
  const std::shared_ptr<Client> client;
};

}  // namespace dlock::detail

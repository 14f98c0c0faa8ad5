// Internal: lets the recipes reach the Client behind a public Session.
#pragma once

#include <memory>

#include "src/session/client.hpp"
#include "dlock/session.hpp"

namespace dlock::detail {

struct SessionAccess {
  static const std::shared_ptr<Client>& client(const Session& session) { return session.client_; }
};

}  // namespace dlock::detail

// Internal: lets the recipes reach the Client behind a public Session.
#pragma once

#include <memory>

#include "dlock/session.hpp"
#include "src/session/client.hpp"

namespace dlock::detail {

struct SessionAccess {
  static const std::shared_ptr<Client>& client(const Session& session) { return session.client_; }
};

}  // namespace dlock::detail

// Internal: inspect() and inspect_tree() on a Client, for what has no Session at hand (the wait
// watchdog, which holds the Client of the acquisition it reports on).
#pragma once

#include <memory>
#include <string_view>

#include "dlock/inspect.hpp"
#include "src/session/client.hpp"

namespace dlock::detail {

LockQueue inspect_on(const std::shared_ptr<Client>& client, std::string_view path);
LockTree inspect_tree_on(const std::shared_ptr<Client>& client, std::string_view base);

}  // namespace dlock::detail

// Internal: wait_graph() on a Client, for what has no Session at hand (the wait watchdog, which
// holds the Client of the acquisition it reports on).
#pragma once

#include <memory>
#include <string_view>

#include "dlock/wait_graph.hpp"
#include "src/session/client.hpp"

namespace dlock::detail {

// The walk (inspect_tree_on()) and the second read of each candidate certain cycle's nodes.
WaitGraph wait_graph_on(const std::shared_ptr<Client>& client, std::string_view base);

}  // namespace dlock::detail

// Internal: up-front checks of a ZooKeeper connect string.
#pragma once

#include <string>

namespace dlock::detail {

// Throws ConnectError (naming the string, the offending server entry and the rule) unless every
// server entry of `connect` (the part before a chroot's first '/', split on ',') is
// `host:port` or `[ipv6]:port` with a non-empty host and a decimal port in 1..65535.
// The ZooKeeper C client accepts ports above 65535 (it truncates them) and then retries the
// unreachable address forever, logging a warning each time; refusing them here keeps a typo
// from looking like a server that is merely down. The chroot is left to the C client.
void check_connect_string(const std::string& connect);

}  // namespace dlock::detail

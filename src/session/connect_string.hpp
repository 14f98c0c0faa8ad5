// Internal: the ZooKeeper connect string: up-front checks, the form the C client takes, and why
// the C client refused one.
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

// `connect` as the C client accepts it, for zookeeper_init2: "[ipv6]:port" entries lose their
// brackets ("[::1]:2181" becomes "::1:2181"); the C client takes the text before an entry's last
// ':' as the host, and would try to resolve "[::1]". Everything else is unchanged. Expects a
// string that passed check_connect_string.
std::string to_c_client_form(const std::string& connect);

// The ConnectError message for a `connect` that passed check_connect_string but that the C client
// refused (zookeeper_init2 returned no handle). The C client refuses a string when a host does not
// resolve, and reports that as an errno (ENOENT, EINVAL) whose text names no file or argument of
// the user's: so each host is resolved again here, and the first one that fails is named with the
// resolver's reason. When every host resolves, the rest of the string (its chroot) was malformed.
std::string refused_connect_string_message(const std::string& connect);

}  // namespace dlock::detail

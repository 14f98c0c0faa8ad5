// Internal: the data written into a lock node, so operators can see who holds what.
#pragma once

#include <string>

namespace dlock::detail {

// A small JSON document: {"client","host","pid","thread","acquired_at"} (UTC, ISO 8601).
std::string holder_info_json();

// A random RFC 4122 version-4 UUID, lowercase 8-4-4-4-12, as Curator's protected-mode prefix uses.
std::string random_uuid();

}  // namespace dlock::detail

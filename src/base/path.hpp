// Internal: validation of lock paths.
#pragma once

#include <string_view>

namespace dlock::detail {

// Throws InvalidPath (naming the path and the rule) unless `path` is a valid lock directory:
// absolute, not the root, no trailing '/', no empty, "." or ".." component, valid UTF-8 with no
// character ZooKeeper rejects (NUL, control characters, U+007F-U+009F, U+D800-U+F8FF,
// U+FFF0-U+FFFF), and not inside the reserved /zookeeper tree.
void check_lock_path(std::string_view path);

}  // namespace dlock::detail

// Internal: checks of SessionOptions::auth and ::acl, and what errors may say of the identity.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "dlock/security.hpp"

namespace dlock::detail {

// Throws Error (errc::invalid_argument) naming the entry, its scheme and the rule; never the secret.
void check_credentials(const std::vector<Credentials>& auth);

// The identities a Session authenticates as, for error messages: scheme and (digest) user name,
// never a password. "no credentials (world:anyone only)" when there are none.
std::string identity_of(const std::vector<Credentials>& auth);

// The ACL nodes get: `acl` if given (refused when it names the creator but no credentials are
// given), else Acl::creator_all_world_read() with credentials and Acl::open() without.
Acl effective_acl(const std::optional<Acl>& acl, const std::vector<Credentials>& auth);

}  // namespace dlock::detail

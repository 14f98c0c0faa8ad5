// dlock/security.hpp: who a Session is to ZooKeeper, and who may touch the nodes it creates.
//
// A lock is only as safe as its nodes: whoever may delete a holder's node lets the next waiter in
// while the holder still works. ZooKeeper checks a node's ACL against the identities a connection
// has authenticated; deleting a node needs DELETE on its parent, creating one needs CREATE on its
// parent. So the ACL that protects a lock's queue is that of its lock directory.
//
//   dlock::Session session({
//       .connect = "zk1:2181,zk2:2181,zk3:2181",
//       .auth = {{.scheme = "digest", .secret = "orders-service:s3cret"}},
//       // .acl defaults to Acl::creator_all_world_read() once credentials are given
//   });
//
// Credentials are sent when a connection is established, again by the C client after every
// reconnect, and again for every session a renewal opens (SessionOptions::renew_expired_session).
// The secret never appears in a log line, an error message, or node data.
//
// The ACL applies to every node the Session creates: lock nodes and the CONTAINER directories
// (and missing ancestors) it creates for them. A directory that already exists keeps the ACL it
// was created with: protect it by letting a Session with credentials create it, or set its ACL
// with zkCli (`setAcl`). See docs/SECURITY.md for the threat model and the server set-up.
//
// Errors: the Session constructor throws `Error` (`errc::invalid_argument`) for a malformed
// credential or ACL (naming the scheme, the entry and the rule, never the secret), and
// `ConnectError` when the server refuses a credential (naming the scheme and the server's
// answer). A lock request the server refuses for lack of permission throws `Error` with
// `errc::not_authorized`, naming the node, the permission missing and the Session's identities.
//
// Transport: Debian's ZooKeeper C client 3.8.0 is built without TLS and SASL, so credentials
// and lock traffic cross the network in clear text; use a trusted network or a tunnel.
#pragma once

#include "dlock/config.hpp"  // first: a clear error below C++20

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dlock {

// One identity to authenticate as, with ZooKeeper's `addAuth`.
struct Credentials {
  // The authentication scheme: "digest" for ZooKeeper's built-in user:password scheme, or one the
  // server has a provider for. Letters, digits, '-' and '_' only; not empty.
  std::string scheme;
  // What the scheme takes: for "digest", "user:password" (user not empty, no ':' in the user).
  // Never logged, never in an error.
  std::string secret;
};

// ZooKeeper's permission bits, as ACL entries and errors name them.
enum Permission : std::uint32_t {
  kRead = 1,    // r: get data, list children
  kWrite = 2,   // w: set data
  kCreate = 4,  // c: create children
  kDelete = 8,  // d: delete children
  kAdmin = 16,  // a: set the ACL
  kAll = 31,    // cdrwa
};

// "cdrwa" letters of a permission set, in ZooKeeper's order (empty for none).
std::string permission_letters(std::uint32_t perms);

// One entry of an ACL: who (scheme and id) may do what (perms).
struct AclEntry {
  std::uint32_t perms = 0;  // a non-empty subset of kAll
  std::string scheme;       // "world", "auth", "digest", "ip", ...
  std::string id;           // "anyone" (world), "" (auth), "user:<base64 sha1>" (digest), an address (ip)

  friend bool operator==(const AclEntry&, const AclEntry&) = default;
};

// The ACL dlock gives every node a Session creates. Immutable; cheap to copy.
class Acl {
 public:
  // world:anyone:cdrwa: anybody may do anything (ZooKeeper's OPEN_ACL_UNSAFE; what Curator and
  // kazoo use by default). The default without credentials.
  static Acl open();
  // auth::cdrwa and world:anyone:r: the identities the creating connection authenticated may do
  // everything (so every process with the same credentials shares the lock); everybody else may
  // only look (list the queue, read node data: `dlockctl`, Curator's and kazoo's participants).
  // The default with credentials. Needs credentials (the server refuses it otherwise).
  static Acl creator_all_world_read();
  // auth::cdrwa alone: nobody without the credentials may even list the queue.
  static Acl creator_all();
  // A list of entries, each with a scheme and a non-empty subset of kAll. Throws `Error`
  // (errc::invalid_argument) naming the entry and the rule for an empty list or a bad entry.
  static Acl custom(std::vector<AclEntry> entries);
  // Parses zkCli's notation, entries separated by ',': "scheme:id:perms" with perms a set of
  // the letters cdrwa, e.g. "digest:orders:Zm9v...=:cdrwa,world:anyone:r" ("auth::cdrwa" has an
  // empty id; a digest id has a ':' of its own). Throws like custom(), naming the entry.
  static Acl parse(std::string_view spec);

  const std::vector<AclEntry>& entries() const noexcept { return entries_; }
  // zkCli's notation, as parse() reads it.
  std::string to_string() const;
  // Whether an entry uses the "auth" scheme (so the server needs credentials to accept it).
  bool needs_credentials() const noexcept;

  friend bool operator==(const Acl&, const Acl&) = default;

 private:
  explicit Acl(std::vector<AclEntry> entries) : entries_(std::move(entries)) {}
  std::vector<AclEntry> entries_;
};

}  // namespace dlock

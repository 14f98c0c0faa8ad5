#include "dlock/security.hpp"

#include <algorithm>

#include "dlock/error.hpp"
#include "src/session/security_options.hpp"

namespace dlock {
namespace {

constexpr std::string_view kLetters = "cdrwa";
constexpr std::uint32_t kBits[] = {kCreate, kDelete, kRead, kWrite, kAdmin};

[[noreturn]] void invalid(const std::string& what) { throw Error(make_error_code(errc::invalid_argument), what); }

// "user:" then the 28-character base64 of a 20-byte SHA-1 ("...=").
bool digest_id(std::string_view id) {
  const auto colon = id.find(':');
  if (colon == std::string_view::npos || colon == 0 || id.size() - colon - 1 != 28) return false;
  const auto hash = id.substr(colon + 1);
  if (hash.back() != '=') return false;
  return std::all_of(hash.begin(), hash.end() - 1, [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '+' || c == '/';
  });
}

bool scheme_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

// A scheme named in an error: what the caller wrote, or a note when it cannot be shown as is.
std::string shown(std::string_view text) {
  for (const char c : text.substr(0, 64)) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return "(a value with control characters)";
  }
  // Appended piecewise: `"\"" + std::string(...)` trips GCC 12's false -Wrestrict at -O3 (PR105651).
  std::string out(1, '"');
  out.append(text.substr(0, 64));
  if (text.size() > 64) out.append("...");
  out.push_back('"');
  return out;
}

void check_scheme(std::string_view scheme, const std::string& where) {
  if (scheme.empty()) invalid(where + ": the scheme is empty");
  if (!std::all_of(scheme.begin(), scheme.end(), scheme_char)) {
    invalid(where + ": scheme " + shown(scheme) + " may hold only letters, digits, '-' and '_'");
  }
}

void check_entry(const AclEntry& entry, const std::string& where) {
  check_scheme(entry.scheme, where);
  if (entry.perms == 0 || (entry.perms & ~static_cast<std::uint32_t>(kAll)) != 0) {
    invalid(where + ": permissions " + std::to_string(entry.perms) + " must be a non-empty subset of cdrwa (1..31)");
  }
  if (entry.scheme == "world" && entry.id != "anyone") {
    invalid(where + ": the world scheme's only id is \"anyone\", got " + shown(entry.id));
  }
  if (entry.scheme == "auth" && !entry.id.empty()) {
    invalid(where + ": the auth scheme takes an empty id (\"auth::cdrwa\"), got " + shown(entry.id));
  }
  if (entry.scheme == "digest" && !digest_id(entry.id)) {
    // Not quoted: a password written where its hash belongs would land in the message.
    invalid(where +
            ": a digest id is \"user:<base64 of the SHA-1 of user:password>\" (28 characters after the "
            "user's ':', ending in '=')");
  }
  if (entry.scheme != "world" && entry.scheme != "auth" && entry.id.empty()) {
    invalid(where + ": scheme \"" + entry.scheme + "\" needs an id");
  }
  if (std::any_of(entry.id.begin(), entry.id.end(),
                  [](char c) { return c == ',' || static_cast<unsigned char>(c) < 0x20; })) {
    invalid(where + ": id " + shown(entry.id) + " may not hold ',' or control characters");
  }
}

std::uint32_t parse_perms(std::string_view letters, const std::string& where) {
  if (letters.empty()) invalid(where + ": no permissions (a subset of the letters cdrwa)");
  std::uint32_t perms = 0;
  for (const char c : letters) {
    const auto at = kLetters.find(c);
    if (at == std::string_view::npos) {
      invalid(where + ": permission letter " + shown(std::string_view(&c, 1)) + " is not one of cdrwa");
    }
    if ((perms & kBits[at]) != 0) invalid(where + ": permission letter '" + std::string(1, c) + "' given twice");
    perms |= kBits[at];
  }
  return perms;
}

}  // namespace

std::string permission_letters(std::uint32_t perms) {
  std::string letters;
  for (std::size_t i = 0; i < kLetters.size(); ++i) {
    if ((perms & kBits[i]) != 0) letters += kLetters[i];
  }
  return letters;
}

Acl Acl::open() { return Acl({{kAll, "world", "anyone"}}); }

Acl Acl::creator_all_world_read() { return Acl({{kAll, "auth", ""}, {kRead, "world", "anyone"}}); }

Acl Acl::creator_all() { return Acl({{kAll, "auth", ""}}); }

Acl Acl::custom(std::vector<AclEntry> entries) {
  if (entries.empty()) invalid("ACL: the list is empty (nobody could use the nodes dlock creates)");
  for (std::size_t i = 0; i < entries.size(); ++i) check_entry(entries[i], "ACL entry " + std::to_string(i + 1));
  return Acl(std::move(entries));
}

Acl Acl::parse(std::string_view spec) {
  std::vector<AclEntry> entries;
  std::size_t start = 0;
  for (int index = 1;; ++index) {
    const auto comma = spec.find(',', start);
    const auto text = spec.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    // Never the whole entry in an error: it may be a credential pasted by mistake. The scheme is
    // named once it is known to be one.
    std::string where = "ACL entry " + std::to_string(index);
    // scheme:id:perms, the id possibly holding ':' itself (digest): the first and the last ':'.
    const auto first = text.find(':');
    const auto last = text.rfind(':');
    if (first == std::string_view::npos || first == last) invalid(where + ": expected scheme:id:perms");
    AclEntry entry;
    entry.scheme = std::string(text.substr(0, first));
    check_scheme(entry.scheme, where);
    where += " (scheme \"" + entry.scheme + "\")";
    entry.id = std::string(text.substr(first + 1, last - first - 1));
    entry.perms = parse_perms(text.substr(last + 1), where);
    entries.push_back(std::move(entry));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return custom(std::move(entries));
}

std::string Acl::to_string() const {
  std::string out;
  for (const auto& entry : entries_) {
    if (!out.empty()) out += ',';
    out += entry.scheme + ":" + entry.id + ":" + permission_letters(entry.perms);
  }
  return out;
}

bool Acl::needs_credentials() const noexcept {
  return std::any_of(entries_.begin(), entries_.end(), [](const AclEntry& e) { return e.scheme == "auth"; });
}

namespace detail {

void check_credentials(const std::vector<Credentials>& auth) {
  for (std::size_t i = 0; i < auth.size(); ++i) {
    const auto& c = auth[i];
    const std::string where = "auth[" + std::to_string(i) + "]";
    check_scheme(c.scheme, where);
    if (c.secret.empty()) invalid(where + " (scheme \"" + c.scheme + "\"): the secret is empty");
    if (c.scheme == "digest") {
      const auto colon = c.secret.find(':');
      if (colon == std::string::npos || colon == 0) {
        invalid(where + " (scheme \"digest\"): the secret must be \"user:password\" with a non-empty user");
      }
    }
  }
}

std::string identity_of(const std::vector<Credentials>& auth) {
  if (auth.empty()) return "no credentials (world:anyone only)";
  std::string out;
  for (const auto& c : auth) {
    if (!out.empty()) out += ", ";
    // For digest the user is not secret (it is in every ACL entry naming it); the password is.
    out += c.scheme == "digest" ? "digest user \"" + c.secret.substr(0, c.secret.find(':')) + "\""
                                : "scheme \"" + c.scheme + "\"";
  }
  return out;
}

Acl effective_acl(const std::optional<Acl>& acl, const std::vector<Credentials>& auth) {
  if (acl) {
    if (acl->needs_credentials() && auth.empty()) {
      invalid("acl " + acl->to_string() +
              " grants the creating identity (scheme \"auth\"), but no credentials are given (SessionOptions::auth): "
              "ZooKeeper would refuse every create");
    }
    return *acl;
  }
  return auth.empty() ? Acl::open() : Acl::creator_all_world_read();
}

}  // namespace detail
}  // namespace dlock

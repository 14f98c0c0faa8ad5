#include "src/base/path.hpp"

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

#include "dlock/error.hpp"
#include "dlock/wait_watchdog.hpp"
#include "src/base/printable.hpp"

namespace dlock::detail {
namespace {

[[noreturn]] void reject(std::string_view path, std::string_view rule) {
  throw InvalidPath("invalid lock path \"" + printable(path) + "\": " + std::string(rule));
}

// Decodes one UTF-8 code point at `i`, advancing `i`; nullopt for a malformed sequence.
std::optional<std::uint32_t> next_code_point(std::string_view s, std::size_t& i) {
  const auto lead = static_cast<unsigned char>(s[i]);
  int length = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xe ? 3 : (lead >> 3) == 0x1e ? 4 : 0;
  if (length == 0 || i + static_cast<std::size_t>(length) > s.size()) return std::nullopt;
  std::uint32_t cp = length == 1 ? lead : lead & (0x7f >> length);
  for (int k = 1; k < length; ++k) {
    const auto cont = static_cast<unsigned char>(s[i + static_cast<std::size_t>(k)]);
    if ((cont >> 6) != 0x2) return std::nullopt;
    cp = (cp << 6) | (cont & 0x3f);
  }
  static constexpr std::uint32_t kMinForLength[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMinForLength[length] || cp > 0x10ffff) return std::nullopt;  // overlong or too big
  i += static_cast<std::size_t>(length);
  return cp;
}

bool rejected_by_zookeeper(std::uint32_t cp) {
  // The ranges of org.apache.zookeeper.common.PathUtils.validatePath.
  return cp == 0 || (cp <= 0x1f) || (cp >= 0x7f && cp <= 0x9f) || (cp >= 0xd800 && cp <= 0xf8ff) ||
         (cp >= 0xfff0 && cp <= 0xffff);
}

// A lock node's path (this plus "/_c_<uuid>-__WRIT__<seq>") and its data must fit in one
// ZooKeeper request (jute.maxbuffer, about 1 MB by default); a path the server cannot take would
// make it drop the connection on every create. Far beyond any real lock path.
constexpr std::size_t kMaxLockPathLength = 256 * 1024;

}  // namespace

void check_lock_path(std::string_view path) {
  if (path.size() > kMaxLockPathLength) {
    throw InvalidPath("invalid lock path \"" + printable(path, 60) + "\" (" + std::to_string(path.size()) +
                      " bytes): longer than the limit of " + std::to_string(kMaxLockPathLength) +
                      " bytes (a lock node must fit in one ZooKeeper request)");
  }
  if (path.empty()) reject(path, "the path is empty; it must be absolute, e.g. \"/locks/orders\"");
  if (path.front() != '/') reject(path, "the path must be absolute (start with '/')");
  if (path == "/") reject(path, "the root cannot be a lock directory; name a node below it");
  if (path.back() == '/') reject(path, "the path must not end with '/'");
  std::size_t start = 1;
  while (start <= path.size()) {
    const auto end = std::min(path.find('/', start), path.size());
    const auto component = path.substr(start, end - start);
    if (component.empty()) reject(path, "the path has an empty component (\"//\")");
    if (component == "." || component == "..") {
      reject(path, "the path has a relative component (\".\" or \"..\"); ZooKeeper paths are canonical");
    }
    start = end + 1;
  }
  if (path == "/zookeeper" || path.starts_with("/zookeeper/")) {
    reject(path, "the /zookeeper tree is reserved by the server");
  }
  for (std::size_t i = 0; i < path.size();) {
    const auto cp = next_code_point(path, i);
    if (!cp) reject(path, "the path is not valid UTF-8");
    if (rejected_by_zookeeper(*cp)) {
      reject(path,
             "the path has a character ZooKeeper rejects (NUL, a control character, "
             "U+007F-U+009F, U+D800-U+F8FF or U+FFF0-U+FFFF)");
    }
  }
}

}  // namespace dlock::detail

namespace dlock {

// Here, beside the lock-path rules it applies, so that Session's constructor (the session layer)
// calls nothing of the lock layers above it.
void WaitWatchdogOptions::check() const {
  if (after < std::chrono::milliseconds::zero()) {
    throw Error(make_error_code(errc::invalid_argument),
                "wait_watchdog.after must not be negative, got " + std::to_string(after.count()) + " ms");
  }
  if (base != "/") {
    try {
      detail::check_lock_path(base);
    } catch (const InvalidPath& e) {
      throw Error(make_error_code(errc::invalid_argument),
                  std::string("wait_watchdog.base must be \"/\" or a lock path: ") + e.what());
    }
  }
}

}  // namespace dlock

// dlock_docs_probe CONNECT PATH SCHEME:SECRET TIMEOUT_MS
//
// The dlock side of docs/SECURITY.md's Curator and kazoo snippets (tests/docs/wrappers): a Session
// with the credentials, as the page's dlock snippet gives them (SessionOptions::auth, so the
// default ACL: creator-all + world-read), and a Mutex on PATH tried for TIMEOUT_MS.
//
// Prints what happened; exit 0: acquired (and released), 3: not acquired within TIMEOUT_MS,
// 1: an error, such as the server refusing the credentials or the queue (NoAuth).
#include <chrono>
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>

#include "dlock/dlock.hpp"

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: dlock_docs_probe CONNECT PATH SCHEME:SECRET TIMEOUT_MS\n");
    return 1;
  }
  const std::string credentials = argv[3];
  const auto colon = credentials.find(':');
  try {
    if (colon == std::string::npos) throw std::invalid_argument("credentials must be SCHEME:SECRET");
    dlock::Session session(
        {.connect = argv[1],
         .auth = {{.scheme = credentials.substr(0, colon), .secret = credentials.substr(colon + 1)}}});
    dlock::Mutex mutex(session, argv[2]);
    const auto timeout = std::chrono::milliseconds(std::stol(argv[4]));
    if (!mutex.try_lock_for(timeout)) {
      std::printf("dlock: not acquired within %lld ms\n", static_cast<long long>(timeout.count()));
      return 3;
    }
    std::printf("dlock: acquired, fencing token %lld\n", static_cast<long long>(mutex.fencing_token()));
    mutex.unlock();
    return 0;
  } catch (const std::exception& e) {
    std::printf("dlock: %s\n", e.what());
    return 1;
  }
}

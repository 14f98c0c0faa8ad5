// The connect string of the server a doc snippet runs against. tests/docs/snippet_sources.py
// replaces the docs' "127.0.0.1:2181" (and zk1:2181, ...) with a call of this function.
#include <cstdio>
#include <cstdlib>

extern "C" const char* dlock_snippet_connect() noexcept {
  const char* value = std::getenv("DLOCK_SNIPPET_CONNECT");
  if (value == nullptr || *value == '\0') {
    // Run by hand, outside tests/docs/snippets.py: say so rather than connect somewhere else.
    std::fputs("dlock_snippet_connect: DLOCK_SNIPPET_CONNECT is not set (tests/docs/snippets.py sets it)\n", stderr);
    std::abort();
  }
  return value;
}

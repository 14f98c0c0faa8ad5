// docs/METRICS.md's OpenTelemetry adapter, compiled against tests/docs/stubs (the API's
// signatures; Debian has no OpenTelemetry). The block is the body of main: its class is then a
// local class, which C++ allows for everything it declares. The run takes and releases a lock on
// the block's Session and checks that the adapter passed each event on to its instrument.
#include <dlock/dlock.hpp>

#include <chrono>
#include <cstdio>
#include <thread>

int main() {
  // @snippet
  {
    dlock::Mutex order(session, "/locks/orders/42");
    std::scoped_lock guard(order);
  }
  bool ok = false;
  for (int i = 0; i < 100 && !ok; ++i) {  // a release is reported once it is sent, not awaited
    ok = opentelemetry_stub::calls("dlock.lock.acquisitions") == 1 &&
         opentelemetry_stub::calls("dlock.lock.grants") == 1 && opentelemetry_stub::calls("dlock.lock.wait") == 1 &&
         opentelemetry_stub::calls("dlock.lock.hold") == 1 && opentelemetry_stub::calls("dlock.lock.holding") == 2 &&
         opentelemetry_stub::calls("dlock.zookeeper.requests") > 0;
    if (!ok) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  for (const char* name : {"dlock.lock.acquisitions", "dlock.lock.grants", "dlock.lock.wait", "dlock.lock.hold",
                           "dlock.lock.waiting", "dlock.lock.holding", "dlock.zookeeper.requests"}) {
    std::printf("%s: %d\n", name, opentelemetry_stub::calls(name));
  }
  return ok ? 0 : 1;
}

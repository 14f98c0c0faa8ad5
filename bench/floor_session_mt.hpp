// bench/floor_session_mt.hpp: the floor's session on the multi-threaded C client (libzookeeper_mt,
// built with THREADED). The client's I/O thread sends and receives; its completion thread runs
// the callbacks, which signal the Event a worker thread sleeps on. floor_bench.cpp's lock is
// written once over this and floor_session_st.hpp.
#pragma once

#include <zookeeper/zookeeper.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <string>

#include "common.hpp"

namespace floor_bench {

constexpr const char* kClientName = "mt";

// A countdown one thread waits on; the C client's completion thread signals it.
struct Event {
  std::mutex mutex;
  std::condition_variable cv;
  int remaining = 1;
  std::int64_t at_ns = 0;  // when it reached zero (CLOCK_MONOTONIC)
  void signal() {
    std::lock_guard guard(mutex);
    if (--remaining == 0) at_ns = bench::mono_ns();
    cv.notify_all();
  }
};

class ClientSession {
 public:
  ClientSession(const std::string& connect, int resolution_delay_ms) {
    handle_ = zookeeper_init(connect.c_str(), &ClientSession::on_session, 10000, nullptr, this, 0);
    if (handle_ == nullptr) throw std::runtime_error("zookeeper_init failed for " + connect);
    if (resolution_delay_ms >= 0) zoo_set_servers_resolution_delay(handle_, resolution_delay_ms);
    std::unique_lock guard(connected_.mutex);
    if (!connected_.cv.wait_for(guard, std::chrono::seconds(10), [&] { return connected_.remaining <= 0; })) {
      throw std::runtime_error("no ZooKeeper session with " + connect + " within 10 s");
    }
  }
  ~ClientSession() { zookeeper_close(handle_); }
  ClientSession(const ClientSession&) = delete;
  ClientSession& operator=(const ClientSession&) = delete;

  // Sends a request: `send(handle)` calls one of the C client's asynchronous functions. Any thread.
  template <class Send>
  int send(Send send) {
    return send(handle_);
  }
  // Sleeps until `event` has been signalled as often as it counts.
  void wait(Event& event) {
    std::unique_lock guard(event.mutex);
    event.cv.wait(guard, [&] { return event.remaining <= 0; });
  }

 private:
  static void on_session(zhandle_t*, int type, int state, const char*, void* context) {
    if (type != ZOO_SESSION_EVENT || state != ZOO_CONNECTED_STATE) return;
    auto& connected = static_cast<ClientSession*>(context)->connected_;
    std::lock_guard guard(connected.mutex);
    if (connected.remaining > 0) --connected.remaining;
    connected.cv.notify_all();
  }

  zhandle_t* handle_ = nullptr;
  Event connected_;
};

}  // namespace floor_bench

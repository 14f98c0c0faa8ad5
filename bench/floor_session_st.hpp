// bench/floor_session_st.hpp: the floor's session on the single-threaded C client
// (libzookeeper_st, built without THREADED). The client has no thread: whoever calls
// zookeeper_interest() and zookeeper_process() drives it, and the callbacks run on that thread.
//
// Here the threads that wait drive it, one at a time (a leader/followers loop): a waiting thread
// with no driver becomes the driver and polls the handle's socket until its own Event is done,
// running every callback (its own and other threads'); then it hands the role to another waiting
// thread. So one thread doing one request at a time sleeps once per reply, as with a blocking
// socket, and no thread exists only to move bytes. The handle is not thread-safe: every call into
// it is made under `mutex_`, which the driver releases only while it sleeps in poll().
//
// No thread drives while none waits, so the handle sends no ping then: a benchmark that stays
// idle for the session timeout (10 s) loses its session. Every workload here waits continuously.
#pragma once

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <zookeeper/zookeeper.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "common.hpp"

namespace floor_bench {

constexpr const char* kClientName = "st";

// A countdown one thread waits on. Signalled only from the C client's callbacks, which run on the
// driving thread inside zookeeper_process(), under the session's mutex: that mutex guards it.
struct Event {
  std::condition_variable cv;
  int remaining = 1;
  std::int64_t at_ns = 0;  // when it reached zero (CLOCK_MONOTONIC)
  void signal() {
    if (--remaining == 0) {
      at_ns = bench::mono_ns();
      cv.notify_one();  // its waiter, if it sleeps (the driver does not)
    }
  }
};

class ClientSession {
 public:
  ClientSession(const std::string& connect, int resolution_delay_ms) {
    wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (wake_fd_ < 0) throw std::runtime_error(std::string("eventfd: ") + std::strerror(errno));
    std::unique_lock guard(mutex_);
    handle_ = zookeeper_init(connect.c_str(), &ClientSession::on_session, 10000, nullptr, this, 0);
    if (handle_ == nullptr) {
      ::close(wake_fd_);
      throw std::runtime_error("zookeeper_init failed for " + connect);
    }
    if (resolution_delay_ms >= 0) zoo_set_servers_resolution_delay(handle_, resolution_delay_ms);
    const auto give_up = bench::Clock::now() + std::chrono::seconds(10);
    while (connected_.remaining > 0) {
      if (bench::Clock::now() > give_up) {
        zookeeper_close(handle_);
        ::close(wake_fd_);
        throw std::runtime_error("no ZooKeeper session with " + connect + " within 10 s");
      }
      drive_once(guard);
    }
  }
  ~ClientSession() {
    std::lock_guard guard(mutex_);
    zookeeper_close(handle_);
    ::close(wake_fd_);
  }
  ClientSession(const ClientSession&) = delete;
  ClientSession& operator=(const ClientSession&) = delete;

  // Sends a request: `send(handle)` calls one of the C client's asynchronous functions, which
  // writes it to the socket at once. Any thread but one inside a callback (that one already holds
  // the mutex). If the socket took only part of it, the driver must also wait to write: wake it.
  template <class Send>
  int send(Send send) {
    std::lock_guard guard(mutex_);
    const int rc = send(handle_);
    if (driving_) {
      int fd = -1, interest = 0;
      timeval tv{};
      if (zookeeper_interest(handle_, &fd, &interest, &tv) == ZOK && (interest & ZOOKEEPER_WRITE) != 0) {
        const std::uint64_t one = 1;
        [[maybe_unused]] const auto written = ::write(wake_fd_, &one, sizeof one);
      }
    }
    return rc;
  }

  // Until `event` is done: drives the handle if no other thread does, else sleeps until the
  // driver signals the event or hands over the role.
  void wait(Event& event) {
    std::unique_lock guard(mutex_);
    while (event.remaining > 0) {
      if (driving_) {
        waiting_.push_back(&event);
        event.cv.wait(guard);
        waiting_.erase(std::find(waiting_.begin(), waiting_.end(), &event));
        continue;
      }
      driving_ = true;
      drive_once(guard);
      driving_ = false;
    }
    // Another thread may be waiting for a reply: it drives now.
    if (!driving_ && !waiting_.empty()) waiting_.front()->cv.notify_one();
  }

 private:
  // One turn of the loop: ask the client what it waits for, sleep in poll() without the mutex,
  // and let the client process what came (or its timeout: pings, reconnects).
  void drive_once(std::unique_lock<std::mutex>& guard) {
    int fd = -1, interest = 0;
    timeval tv{};
    const int rc = zookeeper_interest(handle_, &fd, &interest, &tv);
    if (rc != ZOK && rc != ZCONNECTIONLOSS && rc != ZOPERATIONTIMEOUT) {
      throw std::runtime_error(std::string("zookeeper_interest: ") + zerror(rc));
    }
    pollfd fds[2] = {{wake_fd_, POLLIN, 0}, {fd, 0, 0}};
    if ((interest & ZOOKEEPER_READ) != 0) fds[1].events |= POLLIN;
    if ((interest & ZOOKEEPER_WRITE) != 0) fds[1].events |= POLLOUT;
    const int timeout_ms = static_cast<int>(tv.tv_sec * 1000 + (tv.tv_usec + 999) / 1000);
    guard.unlock();
    const int ready = ::poll(fds, fd >= 0 ? 2 : 1, timeout_ms);
    guard.lock();
    if (ready > 0 && (fds[0].revents & POLLIN) != 0) {
      std::uint64_t count = 0;
      [[maybe_unused]] const auto read = ::read(wake_fd_, &count, sizeof count);
    }
    int events = 0;
    if (fd >= 0 && (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) != 0) events |= ZOOKEEPER_READ;
    if (fd >= 0 && (fds[1].revents & POLLOUT) != 0) events |= ZOOKEEPER_WRITE;
    zookeeper_process(handle_, events);  // errors come back through the callbacks and events
  }

  static void on_session(zhandle_t*, int type, int state, const char*, void* context) {
    auto& connected = static_cast<ClientSession*>(context)->connected_;
    if (type == ZOO_SESSION_EVENT && state == ZOO_CONNECTED_STATE && connected.remaining > 0) connected.signal();
  }

  std::mutex mutex_;  // every call into handle_, and every Event of this session
  zhandle_t* handle_ = nullptr;
  int wake_fd_ = -1;
  bool driving_ = false;
  std::vector<Event*> waiting_;  // the events threads sleep on while another thread drives
  Event connected_;
};

}  // namespace floor_bench

#include "plain_client.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <utility>

namespace dlock::testing {

PlainClient::PlainClient(const std::string& connect, std::chrono::milliseconds session_timeout, const clientid_t* id,
                         watcher_fn watcher, void* context) {
#ifndef THREADED
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) throw std::runtime_error(std::string("dlock::testing: eventfd: ") + std::strerror(errno));
#endif
  {
    std::lock_guard guard(mutex_);
    zh_ = zookeeper_init(connect.c_str(), watcher, static_cast<int>(session_timeout.count()), id, context, 0);
  }
  if (zh_ == nullptr) {
    if (wake_fd_ >= 0) ::close(wake_fd_);
    throw std::runtime_error("dlock::testing: zookeeper_init refused the connect string \"" + connect + "\"");
  }
#ifndef THREADED
  driver_ = std::thread([this] { drive(); });
#endif
}

PlainClient::~PlainClient() {
  if (zh_ != nullptr) close();
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

int PlainClient::close() {
  {
    std::lock_guard guard(mutex_);
    stopping_ = true;
    kick();
  }
  if (driver_.joinable()) driver_.join();
  // Not under the mutex: the multi-threaded library (a THREADED build) joins its completion
  // thread here, and a completion may be waiting for the mutex in call(). The caller must not
  // use the client concurrently.
  return zookeeper_close(std::exchange(zh_, nullptr));  // runs (or waits for) the last completions
}

int PlainClient::state() {
  std::lock_guard guard(mutex_);
  return zoo_state(zh_);
}

clientid_t PlainClient::client_id() {
  std::lock_guard guard(mutex_);
  return *zoo_client_id(zh_);
}

bool PlainClient::wait_connected(std::chrono::milliseconds timeout) {
  const auto give_up = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const int now = state();
    if (now == ZOO_CONNECTED_STATE) return true;
    if (now == ZOO_EXPIRED_SESSION_STATE || now == ZOO_AUTH_FAILED_STATE) return false;
    if (std::chrono::steady_clock::now() > give_up) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

void PlainClient::kick() {
  if (wake_fd_ < 0 || std::this_thread::get_id() == driver_.get_id()) return;
  const std::uint64_t one = 1;
  [[maybe_unused]] const auto written = ::write(wake_fd_, &one, sizeof one);
}

// The single-threaded library's loop: what the handle waits for (its socket, reading and/or
// writing, and the time of its next ping or connection attempt), a sleep in poll() without the
// mutex, then zookeeper_process() with what happened, under it.
void PlainClient::drive() {
#ifndef THREADED
  std::unique_lock guard(mutex_);
  while (!stopping_) {
    int fd = -1, interest = 0;
    timeval tv{};
    // Its errors: the state and the completions say them. After one (an expired session, a
    // resolution or a connect that failed) what it said of its socket and time cannot be
    // trusted: wait 100 ms on nothing but the wake-up, and ask again.
    const int rc = zookeeper_interest(zh_, &fd, &interest, &tv);
    if (rc != ZOK) fd = -1;
    pollfd fds[2] = {{wake_fd_, POLLIN, 0}, {fd, 0, 0}};
    if ((interest & ZOOKEEPER_READ) != 0) fds[1].events |= POLLIN;
    if ((interest & ZOOKEEPER_WRITE) != 0) fds[1].events |= POLLOUT;
    // At most 100 ms, so a close is seen in time.
    const auto wait_ms = rc != ZOK ? 100 : tv.tv_sec * 1000 + (tv.tv_usec + 999) / 1000;
    const int timeout_ms = static_cast<int>(wait_ms < 0 ? 0 : wait_ms > 100 ? 100 : wait_ms);
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
    if (!stopping_) zookeeper_process(zh_, events);
  }
#endif
}

}  // namespace dlock::testing

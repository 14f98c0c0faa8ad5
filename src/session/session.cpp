#include "dlock/session.hpp"

#include <utility>

#include "src/session/client.hpp"

namespace dlock {

std::string_view to_string(SessionState state) noexcept {
  switch (state) {
    case SessionState::Connected:
      return "Connected";
    case SessionState::Suspended:
      return "Suspended";
    case SessionState::Lost:
      return "Lost";
    case SessionState::Closed:
      return "Closed";
  }
  return "Unknown";
}

namespace {

// The locks' options are theirs to check; a bad value fails where it is given.
SessionOptions checked(SessionOptions options) {
  options.handoff.check();
  options.wait_watchdog.check();
  return options;
}

}  // namespace

Session::Session(SessionOptions options) : client_(std::make_shared<detail::Client>(checked(std::move(options)))) {}

Session::~Session() { client_->close(); }

SessionState Session::state() const noexcept { return client_->state(); }
std::int64_t Session::id() const noexcept { return client_->session_id(); }
std::chrono::milliseconds Session::negotiated_timeout() const noexcept { return client_->negotiated_timeout(); }
const std::string& Session::connect_string() const noexcept { return client_->connect_string(); }
void Session::close() { client_->close(); }
Session::Stats Session::stats() const noexcept { return client_->stats(); }

Session::Subscription Session::subscribe(std::function<void(SessionState)> listener) {
  return Subscription(client_, client_->subscribe(std::move(listener)));
}

Session::Subscription::Subscription(std::weak_ptr<detail::Client> client, std::uint64_t id)
    : client_(std::move(client)), id_(id) {}

Session::Subscription::Subscription(Subscription&& other) noexcept
    : client_(std::move(other.client_)), id_(std::exchange(other.id_, 0)) {}

Session::Subscription& Session::Subscription::operator=(Subscription&& other) noexcept {
  if (this != &other) {
    reset();
    client_ = std::move(other.client_);
    id_ = std::exchange(other.id_, 0);
  }
  return *this;
}

Session::Subscription::~Subscription() { reset(); }

void Session::Subscription::reset() {
  if (id_ != 0) {
    if (auto client = client_.lock()) client->unsubscribe(id_);
  }
  id_ = 0;
  client_.reset();
}

}  // namespace dlock

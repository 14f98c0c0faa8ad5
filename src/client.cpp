#include "client.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>
#include <utility>

#include "connect_string.hpp"
#include "janitor.hpp"
#include "lock_site.hpp"
#include "log_bridge.hpp"
#include "test_hooks.hpp"

namespace dlock::detail {
namespace {

std::atomic<std::uint64_t> next_site_id{1};

constexpr int kHostResolutionDelayMs = 1000;
constexpr std::int64_t kMinRequestedTimeoutMs = 1000;
constexpr std::int64_t kMaxRequestedTimeoutMs = 3'600'000;  // far above any server's maximum

// One request's completion callback, registered in the Client's Inflight set until it runs.
template <class Result>
struct RequestOf final : Inflight::Request {
  explicit RequestOf(std::function<void(Result)> callback) : done(std::move(callback)) {}
  void fail(int rc) override {
    if constexpr (std::is_same_v<Result, int>) {
      done(rc);
    } else {
      Result result{};
      result.rc = rc;
      done(std::move(result));
    }
  }
  std::function<void(Result)> done;
};

// Completion trampolines: `data` is a RequestOf; whoever claims it from the Inflight set owns it.
template <class Result>
std::unique_ptr<RequestOf<Result>> claim(const void* data) {
  auto* request = static_cast<RequestOf<Result>*>(const_cast<void*>(data));
  if (!request->owner->claim(request)) return nullptr;
  return std::unique_ptr<RequestOf<Result>>(request);
}

void on_created(int rc, const char* path, const Stat* stat, const void* data) {
  auto request = claim<CreateResult>(data);
  if (!request) return;
  CreateResult result{rc, {}, 0};
  if (rc == ZOK) {
    result.path = path ? path : "";
    result.czxid = stat ? stat->czxid : 0;
  }
  request->done(std::move(result));
}

void on_children(int rc, const String_vector* strings, const void* data) {
  auto request = claim<ChildrenResult>(data);
  if (!request) return;
  ChildrenResult result{rc, {}};
  if (rc == ZOK && strings) {
    result.names.reserve(static_cast<std::size_t>(strings->count));
    for (int i = 0; i < strings->count; ++i) result.names.emplace_back(strings->data[i]);
  }
  request->done(std::move(result));
}

void on_stat(int rc, const Stat* stat, const void* data) {
  auto request = claim<StatResult>(data);
  if (!request) return;
  StatResult result{rc, {}};
  if (rc == ZOK && stat) result.stat = *stat;
  request->done(result);
}

void on_data(int rc, const char*, int, const Stat*, const void* data) {
  if (auto request = claim<int>(data)) request->done(rc);
}

void on_string(int rc, const char*, const void* data) {
  if (auto request = claim<int>(data)) request->done(rc);
}

void on_void(int rc, const void* data) {
  if (auto request = claim<int>(data)) request->done(rc);
}

std::string ms(std::chrono::milliseconds d) { return std::to_string(d.count()) + " ms"; }

}  // namespace

template <class Result, class Submit>
void Client::queue_request(std::function<void(Result)> done, Submit&& submit) {
  auto* request = new RequestOf<Result>(std::move(done));
  inflight_.add(request);
  const int rc = submit(static_cast<const void*>(request), static_cast<Inflight::Request*>(request));
  // Refused outright: the completion will not run. (If it somehow ran, it claimed the request.)
  if (rc != ZOK && inflight_.claim(request)) {
    std::unique_ptr<RequestOf<Result>> owned(request);
    owned->fail(rc);
  }
}

void Waiter::wake() {
  {
    std::lock_guard lock(mutex_);
    woken_ = true;
  }
  cv_.notify_one();
}

bool Waiter::wait(const Deadline& deadline) {
  std::stop_callback on_abandon(deadline.cancel_token(), [this] { wake(); });  // before the lock: may run here
  std::unique_lock lock(mutex_);
  if (deadline.is_never()) {
    cv_.wait(lock, [&] { return woken_; });
    return true;
  }
  return cv_.wait_until(lock, *deadline.when(), [&] { return woken_; });
}

Client::Client(SessionOptions options) : options_(std::move(options)) {
  check_connect_string(options_.connect);
  if (options_.session_timeout <= std::chrono::milliseconds::zero()) {
    throw Error(make_error_code(errc::invalid_argument),
                "session_timeout must be positive, got " + ms(options_.session_timeout));
  }
  if (options_.connect_timeout <= std::chrono::milliseconds::zero()) {
    throw Error(make_error_code(errc::invalid_argument),
                "connect_timeout must be positive, got " + ms(options_.connect_timeout));
  }
  install_log_bridge();
  janitor_ = std::make_unique<Janitor>(*this);
  {
    std::unique_lock lock(handle_mutex_);
    zh_ = open_handle(context_);
  }
  if (zh_ == nullptr) {
    janitor_->stop();
    throw ConnectError(make_error_code(errc::connect_failed), refused_connect_string_message(options_.connect));
  }
  std::unique_lock lock(state_mutex_);
  const bool connected = state_cv_.wait_for(lock, options_.connect_timeout, [&] {
    const auto s = state_.load();
    return s == SessionState::Connected || s == SessionState::Lost;
  });
  const bool usable = connected && state_.load() == SessionState::Connected;
  lock.unlock();
  if (!usable) {
    close();
    throw ConnectError(make_error_code(errc::connect_failed),
                       "cannot connect to ZooKeeper at \"" + options_.connect +
                           "\": no server answered within connect_timeout (" +
                           ms(options_.connect_timeout) + ")");
  }
  if (const auto granted = negotiated_timeout(); granted != options_.session_timeout) {
    log(LogLevel::Warn, "session_timeout " + ms(options_.session_timeout) + " requested from " +
                            options_.connect + "; the server granted " + ms(granted) +
                            " (it clamps timeouts to 2..20 times its tickTime by default)");
  }
}

zhandle_t* Client::open_handle(std::unique_ptr<HandleContext>& context) {
  context = std::make_unique<HandleContext>(HandleContext{this, generation_.fetch_add(1) + 1});
  errno = 0;
  // The C client gives up a handshake after 2/3 of the requested timeout, and its arithmetic
  // overflows for huge ones: requests outside [1 s, 1 h] are sent clamped. The server clamps
  // them further into its own range; the constructor warns when the granted timeout differs.
  const auto requested = std::clamp<std::int64_t>(options_.session_timeout.count(), kMinRequestedTimeoutMs,
                                                  kMaxRequestedTimeoutMs);
  zhandle_t* zh = zookeeper_init2(to_c_client_form(options_.connect).c_str(), &Client::on_event,
                                  static_cast<int>(requested), nullptr, context.get(), 0, &zookeeper_log_callback);
  // By default the C client resolves its host list again every time its I/O thread wakes: a
  // resolver round (sockets, binds, random reads) per request, most of the client's CPU time per
  // lock cycle. Once a second is plenty for a list of addresses that rarely changes.
  if (zh != nullptr) zoo_set_servers_resolution_delay(zh, kHostResolutionDelayMs);
  return zh;
}

void Client::start_recovery() {
  std::lock_guard lock(recovery_mutex_);
  if (closing_) return;
  // A previous recovery has long finished its work (it only swaps and closes a handle).
  if (recovery_.joinable()) recovery_.join();
  recovery_ = std::thread([this] { renew_session(); });
}

void Client::renew_session() {
  // Serialized with close(): a Session being closed is not renewed.
  std::lock_guard closing(close_mutex_);
  zhandle_t* old = nullptr;
  std::unique_ptr<HandleContext> old_context;
  {
    std::unique_lock lock(handle_mutex_);
    if (zh_ == nullptr) return;
    old = std::exchange(zh_, nullptr);
    old_context = std::move(context_);
    zh_ = open_handle(context_);  // from here on the old handle's events are ignored
  }
  if (zh_ == nullptr) log(LogLevel::Error, "could not open a new session to " + options_.connect + " after expiry");
  else log(LogLevel::Warn, "session to " + options_.connect + " expired; opening a new one (locks held are lost)");
  zookeeper_close(old);
  // Completions the old handle dropped while closing will never run.
  inflight_.fail_generation(old_context->generation, ZSESSIONEXPIRED);
}

Client::~Client() { close(); }

void Client::close() {
  {
    std::lock_guard lock(recovery_mutex_);
    closing_ = true;
  }
  if (recovery_.joinable() && recovery_.get_id() != std::this_thread::get_id()) recovery_.join();
  // One closer at a time: a second one returns once the first has finished, never while replies
  // may still be completing.
  std::lock_guard closing(close_mutex_);
  zhandle_t* zh = nullptr;
  {
    // Waits for requests being queued right now; later ones see no handle and get ZCLOSING.
    std::unique_lock lock(handle_mutex_);
    zh = std::exchange(zh_, nullptr);
  }
  // Only now, with the handle out of reach, wake the waiters: woken earlier, they would send the
  // deletes of their nodes on the closing handle, and the C client then often tore the connection
  // down before the server applied the close, leaving the session (and every lock it held) alive
  // until it expired.
  set_state(SessionState::Closed);
  // Closing the session makes the server delete every ephemeral node it created, so releases
  // still queued in the janitor are moot.
  if (zh != nullptr) zookeeper_close(zh);
  // No completion runs any more; the C client dropped those whose replies came in while closing.
  inflight_.fail_all(ZCLOSING);
  if (janitor_) janitor_->stop();
}

std::chrono::milliseconds Client::negotiated_timeout() const noexcept {
  std::shared_lock lock(handle_mutex_);
  return std::chrono::milliseconds(zh_ ? zoo_recv_timeout(zh_) : 0);
}

clientid_t Client::client_id() const {
  std::shared_lock lock(handle_mutex_);
  clientid_t id{};
  if (zh_ != nullptr) id = *zoo_client_id(zh_);
  return id;
}

void Client::throw_if_gone(std::string_view what) const {
  const auto s = state();
  if (s == SessionState::Lost) {
    throw LockLost(std::error_code(ZSESSIONEXPIRED, zookeeper_category()),
                   std::string(what) + ": the ZooKeeper session has expired (state Lost)");
  }
  if (s == SessionState::Closed) {
    throw LockLost(std::error_code(ZCLOSING, zookeeper_category()),
                   std::string(what) + ": the Session has been closed (state Closed)");
  }
}

bool Client::wait_connected(const Deadline& deadline, std::string_view what) {
  // Before the lock: the callback takes it, and runs right here if already requested.
  std::stop_callback on_abandon(deadline.cancel_token(), [this] {
    std::lock_guard lock(state_mutex_);
    state_cv_.notify_all();
  });
  std::unique_lock lock(state_mutex_);
  auto ready = [&] { return state_.load() != SessionState::Suspended || deadline.abandoned(); };
  if (deadline.is_never()) {
    state_cv_.wait(lock, ready);
  } else if (!state_cv_.wait_until(lock, *deadline.when(), ready)) {
    return false;
  }
  lock.unlock();
  if (deadline.abandoned()) return true;  // the caller sees it and gives up
  throw_if_gone(what);
  return true;
}

template <class Submit>
int Client::submit(Inflight::Request* request, Submit&& submit) {
  std::shared_lock lock(handle_mutex_);
  if (zh_ == nullptr) return ZCLOSING;
  request->generation = context_->generation;
  requests_.fetch_add(1, std::memory_order_relaxed);
  return submit(zh_);
}

void Client::create(const std::string& path, std::string_view data, int mode, CreateCallback done) {
  queue_request<CreateResult>(std::move(done), [&](const void* ctx, Inflight::Request* request) {
    return submit(request, [&](zhandle_t* zh) {
      return zoo_acreate2(zh, path.c_str(), data.empty() ? "" : data.data(),
                          static_cast<int>(data.size()), &ZOO_OPEN_ACL_UNSAFE, mode, on_created, ctx);
    });
  });
}

void Client::children(const std::string& path, ChildrenCallback done) {
  queue_request<ChildrenResult>(std::move(done), [&](const void* ctx, Inflight::Request* request) {
    return submit(request, [&](zhandle_t* zh) { return zoo_aget_children(zh, path.c_str(), 0, on_children, ctx); });
  });
}

void Client::exists(const std::string& path, StatCallback done) {
  queue_request<StatResult>(std::move(done), [&](const void* ctx, Inflight::Request* request) {
    return submit(request, [&](zhandle_t* zh) { return zoo_aexists(zh, path.c_str(), 0, on_stat, ctx); });
  });
}

void Client::remove(const std::string& path, RcCallback done) {
  queue_request<int>(std::move(done), [&](const void* ctx, Inflight::Request* request) {
    return submit(request, [&](zhandle_t* zh) { return zoo_adelete(zh, path.c_str(), -1, on_void, ctx); });
  });
}

void Client::sync(const std::string& path, RcCallback done) {
  queue_request<int>(std::move(done), [&](const void* ctx, Inflight::Request* request) {
    return submit(request, [&](zhandle_t* zh) { return zoo_async(zh, path.c_str(), on_string, ctx); });
  });
}

void Client::watch(const std::string& path, RcCallback done) {
  // getData rather than exists: on NONODE it leaves no watch behind (as Curator does).
  queue_request<int>(std::move(done), [&](const void* ctx, Inflight::Request* request) {
    return submit(request, [&](zhandle_t* zh) {
      return zoo_awget(zh, path.c_str(), &Client::on_event, const_cast<void*>(zoo_get_context(zh)), on_data, ctx);
    });
  });
}

void Client::add_waiter(const std::string& path, const std::shared_ptr<Waiter>& waiter) {
  std::lock_guard lock(waiters_mutex_);
  // set_state() stores a final state before it wakes the registered waiters: a waiter arriving
  // after that wake-up must not sleep through the end of the session.
  const auto s = state();
  if (s == SessionState::Lost || s == SessionState::Closed) {
    waiter->wake();
    return;
  }
  waiters_.emplace(path, waiter);
}

void Client::remove_waiter(const std::string& path, const std::shared_ptr<Waiter>& waiter) {
  std::lock_guard lock(waiters_mutex_);
  auto [first, last] = waiters_.equal_range(path);
  for (auto it = first; it != last; ++it) {
    if (it->second == waiter) {
      waiters_.erase(it);
      return;
    }
  }
}

void Client::release_node(const std::string& path) {
  remove(path, [this, path](int rc) {
    if (rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT) {
      if (!test_hooks::no_release_retry.load()) janitor_->delete_node(path);
    }
    // ZOK, ZNONODE: gone. SESSIONEXPIRED, CLOSING, INVALIDSTATE: the session took it.
    else if (rc != ZOK && rc != ZNONODE && rc != ZSESSIONEXPIRED && rc != ZCLOSING &&
             rc != ZINVALIDSTATE) {
      log(LogLevel::Error, "could not delete lock node " + path + ": " + zerror(rc));
    }
  });
}

void Client::release_prefixed(const std::string& dir, const std::string& prefix) {
  janitor_->delete_prefixed(dir, prefix);
}

std::shared_ptr<LockSite> Client::site(const std::string& path, const std::shared_ptr<Client>& self) {
  std::lock_guard lock(sites_mutex_);
  auto& slot = sites_[path];
  if (auto existing = slot.lock()) return existing;
  auto created = std::make_shared<LockSite>(next_site_id.fetch_add(1), path, self);
  slot = created;
  return created;
}

void Client::forget_site(const std::string& path) {
  std::lock_guard lock(sites_mutex_);
  // Only if expired: another thread may already have replaced the entry with a live site.
  if (auto it = sites_.find(path); it != sites_.end() && it->second.expired()) sites_.erase(it);
}

std::uint64_t Client::subscribe(std::function<void(SessionState)> listener) {
  std::lock_guard lock(listeners_mutex_);
  const auto id = next_listener_id_++;
  listeners_.emplace(id, std::move(listener));
  return id;
}

void Client::unsubscribe(std::uint64_t id) {
  std::lock_guard lock(listeners_mutex_);
  listeners_.erase(id);
}

Session::Stats Client::stats() const noexcept {
  return {requests_.load(std::memory_order_relaxed), watch_wakeups_.load(std::memory_order_relaxed)};
}

void Client::on_event(zhandle_t* zh, int type, int zk_state, const char* path, void* context) {
  const auto* handle = static_cast<const HandleContext*>(context);
  Client* self = handle->client;
  if (handle->generation != self->generation_.load()) return;  // a replaced handle closing
  if (type == ZOO_SESSION_EVENT) {
    if (zk_state == ZOO_CONNECTED_STATE) {
      if (const clientid_t* id = zoo_client_id(zh)) self->session_id_.store(id->client_id);
    }
    self->on_session_event(zk_state);
  } else if (path != nullptr) {
    self->on_node_event(path);
  }
}

void Client::on_session_event(int zk_state) {
  if (zk_state == ZOO_CONNECTED_STATE || zk_state == ZOO_READONLY_STATE) {
    set_state(SessionState::Connected);
  } else if (zk_state == ZOO_EXPIRED_SESSION_STATE || zk_state == ZOO_AUTH_FAILED_STATE) {
    set_state(SessionState::Lost);
    if (zk_state == ZOO_EXPIRED_SESSION_STATE && options_.renew_expired_session) start_recovery();
  } else if (state() == SessionState::Connected) {
    set_state(SessionState::Suspended);
  }
  // Waiters re-check: a watch may have been lost with the connection, or the session with it.
  wake_all_waiters();
}

void Client::on_node_event(const char* path) {
  std::vector<std::shared_ptr<Waiter>> woken;
  {
    std::lock_guard lock(waiters_mutex_);
    auto [first, last] = waiters_.equal_range(path);
    for (auto it = first; it != last; ++it) woken.push_back(std::move(it->second));
    waiters_.erase(first, last);
  }
  watch_wakeups_.fetch_add(woken.size(), std::memory_order_relaxed);
  for (auto& waiter : woken) waiter->wake();
}

void Client::wake_all_waiters() {
  std::unordered_multimap<std::string, std::shared_ptr<Waiter>> woken;
  {
    std::lock_guard lock(waiters_mutex_);
    woken.swap(waiters_);
  }
  for (auto& [path, waiter] : woken) waiter->wake();
}

Client::HoldTracking Client::track_hold() {
  HoldTracking tracking{std::make_shared<std::stop_source>(), session_id()};
  std::lock_guard lock(holds_mutex_);
  track_locked(tracking.lost);
  return tracking;
}

std::shared_ptr<std::stop_source> Client::confirm_hold(HoldTracking tracking) {
  if (!tracking.lost->stop_requested()) return std::move(tracking.lost);
  // Under holds_mutex_: a drop after the state is read here signals the new source, since
  // set_state stores the state before signal_holds_lost takes this mutex.
  std::lock_guard lock(holds_mutex_);
  if (holds_untrusted_ || state_.load(std::memory_order_acquire) != SessionState::Connected ||
      session_id() != tracking.session) {
    return std::move(tracking.lost);
  }
  auto fresh = std::make_shared<std::stop_source>();
  track_locked(fresh);
  return fresh;
}

void Client::track_locked(const std::shared_ptr<std::stop_source>& source) {
  if (holds_untrusted_) {
    source->request_stop();
    return;
  }
  if (holds_.size() >= 64 && holds_.size() == holds_.capacity()) {
    std::erase_if(holds_, [](const auto& weak) { return weak.expired(); });
  }
  holds_.push_back(source);
}

void Client::signal_holds_lost() {
  std::vector<std::shared_ptr<std::stop_source>> live;
  {
    std::lock_guard lock(holds_mutex_);
    for (const auto& weak : holds_) {
      if (auto source = weak.lock()) live.push_back(std::move(source));
    }
    holds_.clear();
    // A Suspended session may reconnect: later holds start trusted again. Lost and Closed are
    // terminal: any hold tracked from now on starts signalled.
    holds_untrusted_ = state_.load() != SessionState::Suspended;
  }
  for (auto& source : live) source->request_stop();  // runs users' stop_callbacks: no lock held
}

void Client::set_state(SessionState next) {
  // Held across the change and its dispatch, so a listener subscribed concurrently either sees
  // this change or subscribes after it: never a stale state delivered late.
  std::lock_guard dispatch(listeners_mutex_);
  {
    std::lock_guard lock(state_mutex_);
    const auto current = state_.load();
    if (current == next || current == SessionState::Closed) return;
    // Lost ends only in Closed, or in Connected once renew_session's new handle connects (the
    // expired handle's own events are filtered out in on_event).
    if (current == SessionState::Lost && next == SessionState::Suspended) return;
    if (next == SessionState::Suspended && !ever_connected_) return;
    if (next == SessionState::Connected) ever_connected_ = true;
    state_.store(next, std::memory_order_release);
  }
  state_cv_.notify_all();
  if (next == SessionState::Connected) {
    std::lock_guard lock(holds_mutex_);
    holds_untrusted_ = false;  // a renewed session: holds taken on it are trusted again
  }
  if (next == SessionState::Closed || next == SessionState::Lost) wake_all_waiters();
  if (next != SessionState::Connected &&
      (next != SessionState::Suspended || options_.loss_signal == LossSignal::OnSuspended)) {
    signal_holds_lost();
  }
  // Listeners may unsubscribe (themselves or others) while we iterate: walk by id.
  for (auto it = listeners_.begin(); it != listeners_.end();) {
    const auto id = it->first;
    auto listener = it->second;
    listener(next);
    it = listeners_.upper_bound(id);
  }
}

}  // namespace dlock::detail

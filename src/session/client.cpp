#include "src/session/client.hpp"
#include "src/session/security_options.hpp"

#include <algorithm>
#include <cstdio>
#include <thread>
#include <utility>

#include "src/session/connect_string.hpp"
#include "src/session/janitor.hpp"
#include "src/base/log_bridge.hpp"
#include "src/session/pending.hpp"
#include "src/base/printable.hpp"
#include "src/session/test_hooks.hpp"

namespace dlock::detail {
namespace {

// Set on the threads that run dlock's callbacks: the C client's completion threads and the
// supervisor. close() called there must not close the handle itself (the C client cannot close a
// handle from its own completion thread; the supervisor is joined by close).
thread_local bool t_callback_thread = false;
// The Client whose close() this thread is running: a stop_callback or listener it runs that
// calls close() again returns at once.
thread_local const Client* t_closing = nullptr;

// First pause before retrying a renewal whose new session could not be opened; doubled up to the
// maximum.
constexpr auto kFirstRenewalRetry = std::chrono::milliseconds(100);
constexpr auto kMaxRenewalRetry = std::chrono::seconds(5);

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
  t_callback_thread = true;
  auto* request = static_cast<RequestOf<Result>*>(const_cast<void*>(data));
  if (!request->owner->claim(request)) return nullptr;
  return std::unique_ptr<RequestOf<Result>>(request);
}

void on_created(int rc, const char* path, const Stat* stat, const void* data) {
  auto request = claim<CreateResult>(data);
  if (!request) return;
  CreateResult result{rc, {}, 0, request->generation.load(std::memory_order_relaxed)};
  if (rc == ZOK) {
    result.path = path ? path : "";
    result.czxid = stat ? stat->czxid : 0;
  }
  request->done(std::move(result));
}

// Child events delivered so far, by every Client: a reply and an event of one Client are
// delivered in the server's order on one thread, so comparing marks orders them.
std::atomic<std::uint64_t> child_events{0};

void on_children(int rc, const String_vector* strings, const void* data) {
  auto request = claim<ChildrenResult>(data);
  if (!request) return;
  ChildrenResult result{rc, {}, child_events.load()};
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

void on_data_stat(int rc, const char* value, int length, const Stat* stat, const void* data) {
  auto request = claim<DataResult>(data);
  if (!request) return;
  DataResult result;
  result.rc = rc;
  if (rc == ZOK) {
    if (value && length > 0) result.data.assign(value, static_cast<std::size_t>(length));
    if (stat) result.stat = *stat;
  }
  request->done(std::move(result));
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

std::string seconds_text(Clock::duration d) {
  const auto tenths = std::chrono::duration_cast<std::chrono::milliseconds>(d).count() / 100;
  return std::to_string(tenths / 10) + "." + std::to_string(tenths % 10) + " s";
}

std::string hex_id(std::int64_t id) {
  char buffer[24];
  std::snprintf(buffer, sizeof buffer, "0x%llx", static_cast<unsigned long long>(id));
  return buffer;
}

// The chroot suffix of a connect string ("/app" of "host:2181/app"), or "".
std::string_view chroot_of(std::string_view connect) {
  const auto slash = connect.find('/');
  return slash == std::string_view::npos ? std::string_view() : connect.substr(slash);
}

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

void CallbackWaiter::wake() {
  if (fired_.exchange(true, std::memory_order_acq_rel)) return;
  try {
    on_wake_();
  } catch (const std::exception& e) {
    log(LogLevel::Error, std::string("a waiter's callback threw (ignored): ") + e.what());
  } catch (...) {
    log(LogLevel::Error, "a waiter's callback threw a non-standard exception (ignored)");
  }
}

void BlockingWaiter::wake() {
  {
    std::lock_guard lock(mutex_);
    woken_ = true;
  }
  cv_.notify_one();
}

WaitResult BlockingWaiter::wait(const Deadline& deadline) {
  std::stop_callback on_abandon(deadline.cancel_token(), [this] { wake(); });  // before the lock: may run here
  std::unique_lock lock(mutex_);
  bool woken = true;
  if (deadline.is_never()) {
    cv_.wait(lock, [&] { return woken_; });
  } else {
    woken = cv_.wait_until(lock, *deadline.when(), [&] { return woken_; });
  }
  if (deadline.abandoned()) return WaitResult::abandoned;
  return woken ? WaitResult::ready : WaitResult::timed_out;
}

Client::Client(SessionOptions options)
    : options_(std::move(options)), metrics_(options_.metrics), acl_((check_credentials(options_.auth), effective_acl(options_.acl, options_.auth))) {
  for (const auto& entry : acl_.entries()) {
    acl_entries_.push_back(ACL{static_cast<std::int32_t>(entry.perms),
                               Id{const_cast<char*>(entry.scheme.c_str()), const_cast<char*>(entry.id.c_str())}});
  }
  acl_vector_ = ACL_vector{static_cast<std::int32_t>(acl_entries_.size()), acl_entries_.data()};
  for (std::size_t i = 0; i < options_.auth.size(); ++i) auth_tags_.push_back({this, i});
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
  {
    std::unique_lock lock(state_mutex_);
    const auto until = steady_deadline_after(options_.connect_timeout);
    state_cv_.wait_until(lock, until, [&] {
      const auto s = state_.load();
      return s == SessionState::Connected || s == SessionState::Lost;
    });
  }
  bool auth_refused = false;
  {
    std::lock_guard lock(state_mutex_);
    auth_refused = auth_refused_;
  }
  // A refused credential ends the handle (Lost): await_credentials() says so, not a time-out.
  if (state_.load() != SessionState::Connected && !auth_refused) {
    close_now();  // not close(): on a callback thread that would start a closer thread
    throw ConnectError(make_error_code(errc::connect_failed),
                       "cannot connect to ZooKeeper at \"" + printable(options_.connect) +
                           "\": no server answered within connect_timeout (" +
                           ms(options_.connect_timeout) + ")");
  }
  await_credentials();
  check_chroot();
  supervisor_ = std::thread([this] { supervise(); });
  if (const auto granted = negotiated_timeout(); granted != options_.session_timeout) {
    log(LogLevel::Warn, "session_timeout " + ms(options_.session_timeout) + " requested from " +
                            options_.connect + "; the server granted " + ms(granted) +
                            " (it clamps timeouts to 2..20 times its tickTime by default)");
  }
}

void Client::check_chroot() {
  const auto chroot = chroot_of(options_.connect);
  if (chroot.empty()) return;
  // With a chroot, the C client sends "/" as the chroot node itself.
  Pending<StatResult> root;
  exists("/", root.callback());
  const int rc = root.get().rc;
  if (rc == ZOK) return;
  close_now();
  throw ConnectError(make_error_code(errc::connect_failed),
                     "cannot connect to ZooKeeper at \"" + printable(options_.connect) + "\": " +
                         (rc == ZNONODE ? "its chroot \"" + std::string(chroot) +
                                              "\" does not exist on the ensemble (create that node first; "
                                              "dlock does not create a chroot, so a misspelt one is not "
                                              "silently made)"
                                        : "checking its chroot \"" + std::string(chroot) + "\" failed: " + zerror(rc)));
}

zhandle_t* Client::open_handle(std::unique_ptr<HandleContext>& context) {
  context = std::make_unique<HandleContext>(HandleContext{this, generation_.fetch_add(1) + 1});
  if (const int ms = test_hooks::slow_session_open_ms.load(); ms > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  }
  if (test_hooks::fail_session_opens.load() > 0) {
    test_hooks::fail_session_opens.fetch_sub(1);
    return nullptr;
  }
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
  // Before any request: the server applies a connection's packets in order, so every create
  // this handle sends is made by the authenticated identity.
  if (zh != nullptr && !(context->generation > 1 && test_hooks::skip_auth_on_renewal.load()) && !send_credentials(zh)) {
    zookeeper_close(zh);  // a handle without its identity would fail every create: as if it never opened
    return nullptr;
  }
  return zh;
}

bool Client::send_credentials(zhandle_t* zh) {
  for (std::size_t i = 0; i < options_.auth.size(); ++i) {
    const auto& credentials = options_.auth[i];
    int rc = ZOK;
    // The C client refuses (ZINVALIDSTATE) while its handle sits between two connection attempts,
    // as right after a host of the connect string refused it: a moment later it takes it.
    for (int attempt = 0; attempt < 200; ++attempt) {
      rc = zoo_add_auth(zh, credentials.scheme.c_str(), credentials.secret.data(),
                        static_cast<int>(credentials.secret.size()), &Client::on_auth_reply, &auth_tags_[i]);
      if (rc != ZINVALIDSTATE) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (rc != ZOK) {
      log(LogLevel::Error, "cannot send the credentials auth[" + std::to_string(i) + "] (scheme \"" +
                               credentials.scheme + "\") to a new ZooKeeper handle: " + zerror(rc));
      return false;
    }
  }
  return true;
}

void Client::on_auth_reply(int rc, const void* data) {
  // Only a refusal counts. Any other code means the connection went before the reply (the C
  // client then sends every credential again on the next one), or the handle is closing. The
  // C client hands the first reply's code to every pending completion, so which credential was
  // refused is not known: the error names them all.
  if (rc != ZAUTHFAILED) return;
  Client* self = static_cast<const AuthTag*>(data)->client;
  {
    std::lock_guard lock(self->state_mutex_);
    self->auth_refused_ = true;
  }
  self->state_cv_.notify_all();
  log(LogLevel::Error, "ZooKeeper at " + printable(self->options_.connect) + " refused the credentials (" +
                           self->schemes() + "): " + zerror(rc));
}

std::string Client::schemes() const {
  std::string out;
  for (const auto& credentials : options_.auth) out += (out.empty() ? "scheme \"" : ", scheme \"") + credentials.scheme + "\"";
  return out;
}

void Client::await_credentials() {
  if (options_.auth.empty()) return;
  const auto until = steady_deadline_after(options_.connect_timeout);
  const auto refused_error = [&](const std::string& why) {
    close_now();
    return ConnectError(make_error_code(errc::connect_failed),
                        "cannot connect to ZooKeeper at \"" + printable(options_.connect) + "\": " + why);
  };
  // The C client sends the credentials first on every connection, and the server closes a
  // connection at the first credential it refuses: a request answered after them proves that
  // every one was accepted.
  for (;;) {
    Pending<StatResult> probe;
    exists("/", probe.callback());
    const int rc = probe.get().rc;
    if (rc == ZOK || rc == ZNONODE) return;  // ZNONODE: a missing chroot, check_chroot's to report
    bool refused = false;
    {
      std::lock_guard lock(state_mutex_);
      refused = auth_refused_;
    }
    if (refused || rc == ZAUTHFAILED) {
      throw refused_error("it refused the credentials (" + schemes() + "): " + zerror(ZAUTHFAILED) +
                          " (is there an authentication provider for each scheme on the server?)");
    }
    if (!reply_lost(rc) && rc != ZCLOSING && rc != ZSESSIONEXPIRED) throw refused_error(zerror(rc));
    std::unique_lock lock(state_mutex_);
    if (!state_cv_.wait_until(lock, until, [&] { return state_.load() == SessionState::Connected || auth_refused_; })) {
      lock.unlock();
      throw refused_error("no server answered with the credentials (" + schemes() + ") accepted within connect_timeout (" +
                          ms(options_.connect_timeout) + ")");
    }
  }
}

std::string Client::identity() const { return identity_of(options_.auth); }

void Client::supervise() {
  t_callback_thread = true;
  Clock::duration retry = kFirstRenewalRetry;
  std::unique_lock lock(supervisor_mutex_);
  while (!stopping_) {
    if (replace_requested_) {
      replace_requested_ = false;  // a request made while this one runs is kept
      lock.unlock();
      const bool done = replace_handle(options_.renew_expired_session);
      lock.lock();
      if (done) {
        retry = kFirstRenewalRetry;
      } else {
        replace_requested_ = true;
        supervisor_cv_.wait_for(lock, retry, [&] { return stopping_; });
        retry = std::min<Clock::duration>(retry * 2, kMaxRenewalRetry);
      }
      continue;
    }
    std::optional<Clock::time_point> due;
    {
      std::lock_guard state_lock(state_mutex_);
      due = local_expiry_due_locked();
    }
    if (!due) {
      supervisor_cv_.wait(lock);
    } else if (Clock::now() < *due) {
      supervisor_cv_.wait_until(lock, *due);
    } else {
      lock.unlock();
      expire_locally();
      lock.lock();
    }
  }
}

std::optional<Clock::time_point> Client::local_expiry_due_locked() const {
  if (state_.load() != SessionState::Suspended || !ever_connected_) return std::nullopt;
  return disconnected_since_ + std::chrono::milliseconds(negotiated_ms_.load());
}

// Curator's rule: a session disconnected for its whole timeout is treated as expired, because the
// server has (or soon will have) expired it and granted its locks to others, and the client only
// learns that once it reconnects, which a partition can delay indefinitely.
void Client::expire_locally() {
  const auto id = session_id();
  // Only from Suspended: reconnected meanwhile, or already expired by the server (which then
  // asked for the renewal itself), nothing to do.
  if (!set_state(SessionState::Lost, SessionState::Suspended)) return;
  log(LogLevel::Warn, "no ZooKeeper server of " + options_.connect + " answered for the session timeout (" +
                          ms(std::chrono::milliseconds(negotiated_ms_.load())) + "): session " + hex_id(id) +
                          " is treated as expired; its locks are lost" +
                          (options_.renew_expired_session ? "; opening a new session" : ""));
  request_replacement();
}

void Client::on_session_expired() {
  set_state(SessionState::Lost);
  if (options_.renew_expired_session) request_replacement();
}

void Client::request_replacement() {
  {
    std::lock_guard lock(supervisor_mutex_);
    replace_requested_ = true;
  }
  supervisor_cv_.notify_all();
}

void Client::notify_supervisor() {
  { std::lock_guard lock(supervisor_mutex_); }  // the supervisor is waiting, or will see the change
  supervisor_cv_.notify_all();
}

bool Client::replace_handle(bool renew) {
  std::unique_ptr<HandleContext> context;
  zhandle_t* fresh = nullptr;
  if (renew) {
    fresh = open_handle(context);  // resolves host names: no lock held
    if (fresh == nullptr) {
      // Once per failing streak: a name-resolution outage would otherwise log every few seconds.
      if (failed_renewals_++ == 0) {
        log(LogLevel::Error, "could not open a new session after expiry: " +
                                 refused_connect_string_message(options_.connect) +
                                 "; retrying with backoff until it succeeds or the Session is closed");
      }
      return false;
    }
    if (failed_renewals_ > 0) {
      log(LogLevel::Warn, "opened a new session to " + options_.connect + " after " +
                              std::to_string(failed_renewals_) + " failed attempt(s)");
      failed_renewals_ = 0;
    }
  }
  zhandle_t* old = nullptr;
  std::unique_ptr<HandleContext> old_context;
  {
    std::unique_lock lock(handle_mutex_);
    old = std::exchange(zh_, fresh);
    old_context = std::exchange(context_, std::move(context));
  }
  if (old != nullptr) zookeeper_close(old);
  // Completions the old handle dropped while closing will never run.
  if (old_context) inflight_.fail_generation(old_context->generation, ZSESSIONEXPIRED);
  return true;
}

Client::~Client() {
  close();
  std::thread closer;
  {
    std::lock_guard lock(supervisor_mutex_);
    closer = std::move(closer_);
  }
  if (closer.joinable()) closer.join();
}

void Client::close() {
  if (t_closing == this) return;  // a callback run by this close() closing again
  if (t_callback_thread) {
    close_in_background();
    return;
  }
  close_now();
}

void Client::close_in_background() {
  std::lock_guard lock(supervisor_mutex_);
  if (stopping_ || closer_.joinable()) return;  // a close is under way
  closer_ = std::thread([this] { close_now(); });
}

void Client::close_now() {
  const Client* outer = std::exchange(t_closing, this);
  {
    // One closer at a time: a second one returns once the first has finished, never while replies
    // may still be completing.
    std::lock_guard closing(close_mutex_);
    close_handle();
  }
  // Users' callbacks (stop_callbacks, listeners) for Closed run with no dlock lock held.
  run_deferred_callbacks();
  t_closing = outer;
}

void Client::close_handle() {
  {
    std::lock_guard lock(supervisor_mutex_);
    stopping_ = true;
  }
  supervisor_cv_.notify_all();
  if (supervisor_.joinable()) supervisor_.join();  // ends a renewal; none starts any more
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
  set_state(SessionState::Closed, std::nullopt, 0, /*defer_callbacks=*/true);
  // Closing the session makes the server delete every ephemeral node it created, so releases
  // still queued in the janitor are moot.
  if (zh != nullptr) zookeeper_close(zh);
  // No completion runs any more; the C client dropped those whose replies came in while closing.
  inflight_.fail_all(ZCLOSING);
  if (janitor_) janitor_->stop();
}

void Client::run_deferred_callbacks() {
  bool signal = false;
  {
    std::lock_guard lock(state_mutex_);
    signal = std::exchange(deferred_signal_, false);
  }
  if (signal) observe(SessionState::Closed, true);
  dispatch_state_changes();
}

std::chrono::milliseconds Client::negotiated_timeout() const noexcept {
  return std::chrono::milliseconds(negotiated_ms_.load(std::memory_order_acquire));
}

std::optional<std::chrono::milliseconds> Client::disconnected_for() const {
  std::lock_guard lock(state_mutex_);
  const auto s = state_.load();
  if (s == SessionState::Connected || s == SessionState::Closed || !ever_connected_) return std::nullopt;
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - disconnected_since_);
}

bool Client::owns_nodes_of(std::uint64_t generation) const noexcept {
  const auto s = state();
  return generation == generation_.load(std::memory_order_acquire) && s != SessionState::Lost &&
         s != SessionState::Closed;
}

clientid_t Client::client_id() const {
  std::shared_lock lock(handle_mutex_);
  clientid_t id{};
  if (zh_ != nullptr) id = *zoo_client_id(zh_);
  return id;
}

std::optional<Client::Ended> Client::ended() const {
  const auto s = state();
  if (s == SessionState::Lost) {
    return Ended{std::error_code(ZSESSIONEXPIRED, zookeeper_category()),
                 "the ZooKeeper session has expired (state Lost)"};
  }
  if (s == SessionState::Closed) {
    return Ended{std::error_code(ZCLOSING, zookeeper_category()), "the Session has been closed (state Closed)"};
  }
  return std::nullopt;
}

WaitResult Client::wait_connected(const Deadline& deadline) {
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
    return WaitResult::timed_out;  // not connected by the deadline (abandoned or not since)
  }
  lock.unlock();
  if (deadline.abandoned()) return WaitResult::abandoned;
  return ended() ? WaitResult::session_ended : WaitResult::ready;
}

template <class Submit>
int Client::submit(Inflight::Request* request, RequestKind kind, Submit&& submit) {
  std::shared_lock lock(handle_mutex_);
  if (zh_ == nullptr) return ZCLOSING;
  request->generation.store(context_->generation, std::memory_order_relaxed);
  requests_.fetch_add(1, std::memory_order_relaxed);
  metrics_.emit([kind](MetricsSink& sink) { sink.on_request(kind); });
  return submit(zh_);
}

void Client::create(const std::string& path, std::string_view data, int mode, CreateCallback done) {
  queue_request<CreateResult>(std::move(done), [&](const void* ctx, Inflight::Request* request) {
    return submit(request, RequestKind::Create, [&](zhandle_t* zh) {
      return zoo_acreate2(zh, path.c_str(), data.empty() ? "" : data.data(),
                          static_cast<int>(data.size()), &acl_vector_, mode, on_created, ctx);
    });
  });
}

void Client::children(const std::string& path, ChildrenCallback done, bool watch) {
  queue_request<ChildrenResult>(std::move(done), [&](const void* ctx, Inflight::Request* request) {
    return submit(request, RequestKind::GetChildren,
                  [&](zhandle_t* zh) { return zoo_aget_children(zh, path.c_str(), watch ? 1 : 0, on_children, ctx); });
  });
}

std::uint64_t Client::watch_children(const std::string& path, ChildEventCallback callback) {
  std::lock_guard lock(child_watches_mutex_);
  const auto id = next_child_watch_++;
  child_watches_[path].emplace(id, std::move(callback));
  child_watch_paths_.emplace(id, path);
  return id;
}

void Client::unwatch_children(std::uint64_t id) {
  std::lock_guard lock(child_watches_mutex_);
  const auto it = child_watch_paths_.find(id);
  if (it == child_watch_paths_.end()) return;
  const auto of_path = child_watches_.find(it->second);
  of_path->second.erase(id);
  if (of_path->second.empty()) child_watches_.erase(of_path);
  child_watch_paths_.erase(it);
}

void Client::exists(const std::string& path, StatCallback done) {
  queue_request<StatResult>(std::move(done), [&](const void* ctx, Inflight::Request* request) {
    return submit(request, RequestKind::Exists, [&](zhandle_t* zh) { return zoo_aexists(zh, path.c_str(), 0, on_stat, ctx); });
  });
}

void Client::get(const std::string& path, DataCallback done) {
  queue_request<DataResult>(std::move(done), [&](const void* ctx, Inflight::Request* request) {
    return submit(request, RequestKind::GetData, [&](zhandle_t* zh) { return zoo_aget(zh, path.c_str(), 0, on_data_stat, ctx); });
  });
}

void Client::remove(const std::string& path, RcCallback done) {
  queue_request<int>(std::move(done), [&](const void* ctx, Inflight::Request* request) {
    return submit(request, RequestKind::Delete, [&](zhandle_t* zh) { return zoo_adelete(zh, path.c_str(), -1, on_void, ctx); });
  });
}

void Client::sync(const std::string& path, RcCallback done) {
  queue_request<int>(std::move(done), [&](const void* ctx, Inflight::Request* request) {
    return submit(request, RequestKind::Sync, [&](zhandle_t* zh) { return zoo_async(zh, path.c_str(), on_string, ctx); });
  });
}

void Client::watch(const std::string& path, RcCallback done) {
  // getData rather than exists: on NONODE it leaves no watch behind (as Curator does).
  queue_request<int>(std::move(done), [&](const void* ctx, Inflight::Request* request) {
    return submit(request, RequestKind::GetData, [&](zhandle_t* zh) {
      return zoo_awget(zh, path.c_str(), &Client::on_event, const_cast<void*>(zoo_get_context(zh)), on_data, ctx);
    });
  });
}

void Client::add_waiter(const std::string& path, const std::shared_ptr<Waiter>& waiter) {
  {
    std::lock_guard lock(waiters_mutex_);
    // set_state() stores a final state before it wakes the registered waiters: a waiter arriving
    // after that wake-up must not sleep through the end of the session.
    const auto s = state();
    if (s != SessionState::Lost && s != SessionState::Closed) {
      waiters_[path].emplace(waiter.get(), waiter);  // registered again: still once
      return;
    }
  }
  waiter->wake();  // with no dlock mutex held, as every wake
}

void Client::add_state_waiter(const std::shared_ptr<Waiter>& waiter) {
  {
    std::lock_guard lock(waiters_mutex_);
    const auto s = state();  // as add_waiter
    if (s != SessionState::Lost && s != SessionState::Closed) {
      state_waiters_.emplace(waiter.get(), waiter);
      return;
    }
  }
  waiter->wake();
}

void Client::remove_state_waiter(const std::shared_ptr<Waiter>& waiter) {
  std::lock_guard lock(waiters_mutex_);
  state_waiters_.erase(waiter.get());
}

void Client::remove_waiter(const std::string& path, const std::shared_ptr<Waiter>& waiter) {
  std::lock_guard lock(waiters_mutex_);
  const auto of_path = waiters_.find(path);
  if (of_path == waiters_.end()) return;
  of_path->second.erase(waiter.get());
  if (of_path->second.empty()) waiters_.erase(of_path);
}

void Client::release_node(const std::string& path) {
  remove(path, [this, path](int rc) {
    if (reply_lost(rc)) {
      if (!test_hooks::no_release_retry.load()) janitor_->delete_node(path);
    }
    // ZOK, ZNONODE: gone. SESSIONEXPIRED, CLOSING, INVALIDSTATE: the session took it.
    else if (rc == ZNOAUTH) {
      log(LogLevel::Error, "could not delete node " + path + ": ZooKeeper refused it (" + zerror(rc) +
                               "): the session's identity (" + identity() +
                               ") lacks the DELETE permission on its lock directory (its ACL); the node stays, and "
                               "blocks the lock, until the session ends");
    } else if (rc != ZOK && rc != ZNONODE && rc != ZSESSIONEXPIRED && rc != ZCLOSING &&
             rc != ZINVALIDSTATE) {
      log(LogLevel::Error, "could not delete node " + path + ": " + zerror(rc));
    }
  });
}

void Client::release_prefixed(const std::string& dir, const std::string& prefix) {
  janitor_->delete_prefixed(dir, prefix);
}

std::uint64_t Client::subscribe(std::function<void(SessionState)> listener) {
  std::lock_guard lock(listeners_mutex_);
  auto entry = std::make_shared<Listener>();
  entry->call = std::move(listener);
  {
    // Changes made before this point are not delivered to it: it subscribed after them.
    std::lock_guard state_lock(state_mutex_);
    entry->subscribed_after = state_changes_;
  }
  const auto id = next_listener_id_++;
  listeners_.emplace(id, std::move(entry));
  return id;
}

void Client::unsubscribe(std::uint64_t id) {
  std::unique_lock lock(listeners_mutex_);
  listeners_.erase(id);
  // A listener that unsubscribes itself (or is unsubscribed by another listener of the same
  // delivery) does not wait for itself.
  if (delivering_thread_ == std::this_thread::get_id()) return;
  listener_returned_.wait(lock, [&] { return running_listener_ != id; });
}

Session::Stats Client::stats() const noexcept {
  return {requests_.load(std::memory_order_relaxed), watch_wakeups_.load(std::memory_order_relaxed)};
}

void Client::on_event(zhandle_t* zh, int type, int zk_state, const char* path, void* context) {
  t_callback_thread = true;
  const auto* handle = static_cast<const HandleContext*>(context);
  Client* self = handle->client;
  if (handle->generation != self->generation_.load()) return;  // a replaced handle closing
  if (type == ZOO_SESSION_EVENT) {
    if (zk_state == ZOO_CONNECTED_STATE) {
      if (const clientid_t* id = zoo_client_id(zh)) self->session_id_.store(id->client_id);
      self->negotiated_ms_.store(zoo_recv_timeout(zh));
    }
    self->on_session_event(zk_state, handle->generation);
  } else if (path != nullptr) {
    if (type == ZOO_CHILD_EVENT || type == ZOO_DELETED_EVENT) self->on_child_event(path);
    self->on_node_event(path);
  }
}

void Client::on_session_event(int zk_state, std::uint64_t generation) {
  if (zk_state == ZOO_CONNECTED_STATE || zk_state == ZOO_READONLY_STATE) {
    set_state(SessionState::Connected, std::nullopt, generation);
  } else if (zk_state == ZOO_EXPIRED_SESSION_STATE) {
    on_session_expired();
  } else if (zk_state == ZOO_AUTH_FAILED_STATE) {
    // The handle is done for (the server refused a credential). Recorded before the state moves:
    // the constructor, woken by that move, must see a refusal, not a time-out, even when this
    // event comes before the auth reply (seen once in a fresh-clone run). Then like an expiry:
    // Lost, and a new session if renewals are on (the constructor reports it: await_credentials).
    {
      std::lock_guard lock(state_mutex_);
      auth_refused_ = true;
    }
    on_session_expired();
  } else if (state() == SessionState::Connected) {
    set_state(SessionState::Suspended);
  }
  // Waiters re-check: a watch may have been lost with the connection, or the session with it.
  wake_all_waiters();
}

void Client::on_node_event(const char* path) {
  WaiterSet woken;
  {
    std::lock_guard lock(waiters_mutex_);
    const auto of_path = waiters_.find(path);
    if (of_path == waiters_.end()) return;
    woken.swap(of_path->second);
    waiters_.erase(of_path);
  }
  watch_wakeups_.fetch_add(woken.size(), std::memory_order_relaxed);
  for (auto& [key, waiter] : woken) waiter->wake();
}

void Client::on_child_event(const char* path) {
  const auto mark = child_events.fetch_add(1) + 1;
  std::lock_guard lock(child_watches_mutex_);
  const auto of_path = child_watches_.find(path);
  if (of_path == child_watches_.end()) return;
  // A copy: a callback may unwatch itself.
  const auto callbacks = of_path->second;
  for (const auto& [id, callback] : callbacks) callback(mark);
}

void Client::wake_all_waiters() {
  std::unordered_map<std::string, WaiterSet> woken;
  WaiterSet state_woken;
  {
    std::lock_guard lock(waiters_mutex_);
    woken.swap(waiters_);
    state_woken.swap(state_waiters_);
  }
  for (auto& [path, of_path] : woken) {
    for (auto& [key, waiter] : of_path) waiter->wake();
  }
  for (auto& [key, waiter] : state_woken) waiter->wake();
}

std::shared_ptr<StateObserver> Client::state_observer(const std::function<std::shared_ptr<StateObserver>()>& make) {
  std::lock_guard lock(observer_mutex_);
  if (!observer_) observer_ = make();
  return observer_;
}

void Client::observe(SessionState next, bool trust_lost) {
  std::shared_ptr<StateObserver> observer;
  {
    std::lock_guard lock(observer_mutex_);
    observer = observer_;
  }
  if (observer) observer->on_state(next, trust_lost);
}

bool Client::set_state(SessionState next, std::optional<SessionState> only_from, std::uint64_t event_generation,
                       bool defer_callbacks) {
  SessionState previous;
  Clock::duration outage{};
  SessionStateChanged change;
  {
    std::lock_guard lock(state_mutex_);
    previous = state_.load();
    if (previous == next || previous == SessionState::Closed) return false;
    if (only_from && previous != *only_from) return false;
    // Lost ends only in Closed, or in Connected once a handle newer than the lost one connects:
    // the lost handle itself may still reconnect (a session declared lost locally may be alive
    // at the server) until it is closed, and must not bring the state back.
    if (previous == SessionState::Lost && next == SessionState::Suspended) return false;
    if (previous == SessionState::Lost && next == SessionState::Connected && event_generation <= lost_generation_) {
      return false;
    }
    if (next == SessionState::Suspended && !ever_connected_) return false;
    if (next == SessionState::Lost) lost_generation_ = std::max(lost_generation_, generation_.load());
    const auto now = Clock::now();
    if (previous == SessionState::Connected) disconnected_since_ = now;
    // Closing a connected session ends it; it begins no disconnection.
    change.disconnected_now = previous == SessionState::Connected && next != SessionState::Closed;
    // A disconnection ends when the session is back, or closed: it began when Connected was left
    // (a Lost in between is part of it); before the first connection there was none.
    if ((next == SessionState::Connected || next == SessionState::Closed) && previous != SessionState::Connected &&
        ever_connected_) {
      change.reconnected_or_closed = true;
      change.disconnected = now - disconnected_since_;
    }
    if (next == SessionState::Connected && ever_connected_) outage = now - disconnected_since_;
    if (next == SessionState::Connected) ever_connected_ = true;
    state_.store(next, std::memory_order_release);
    undelivered_.push_back({++state_changes_, next});
  }
  state_cv_.notify_all();
  notify_supervisor();
  log_transition(previous, next, outage);
  change.from = previous;
  change.to = next;
  metrics_.emit([&](MetricsSink& sink) { sink.on_session_state(change); });
  // A Connected is told at once (even on a close's path): it clears, it signals nothing.
  if (next == SessionState::Connected) observe(next, false);
  if (next == SessionState::Closed || next == SessionState::Lost) wake_all_waiters();
  const bool trust_lost = next != SessionState::Connected &&
                          (next != SessionState::Suspended || options_.loss_signal == LossSignal::OnSuspended);
  if (defer_callbacks) {
    std::lock_guard lock(state_mutex_);
    deferred_signal_ = deferred_signal_ || trust_lost;
    return true;
  }
  if (next != SessionState::Connected) observe(next, trust_lost);
  dispatch_state_changes();
  return true;
}

// One line per change of the connection, so an outage reads as two lines, not hundreds.
void Client::log_transition(SessionState from, SessionState to, Clock::duration outage) {
  const std::string id = hex_id(session_id());
  switch (to) {
    case SessionState::Suspended:
      log(LogLevel::Warn, "connection to ZooKeeper at " + options_.connect + " lost (session " + id +
                              "); reconnecting");
      break;
    case SessionState::Connected:
      if (from == SessionState::Lost) {
        log(LogLevel::Warn, "new session " + id + " established with ZooKeeper at " + options_.connect +
                                " after " + seconds_text(outage) + " without one");
      } else if (from == SessionState::Suspended && outage > Clock::duration::zero()) {
        log(LogLevel::Warn, "reconnected to ZooKeeper at " + options_.connect + " after " +
                                seconds_text(outage) + " (session " + id + " kept)");
      }
      break;
    case SessionState::Lost:
      log(LogLevel::Warn, "session " + id + " to ZooKeeper at " + options_.connect +
                              " expired; the locks it held are lost");
      break;
    case SessionState::Closed:
      break;  // the application asked for it
  }
}

void Client::dispatch_state_changes() {
  {
    std::lock_guard lock(state_mutex_);
    if (delivering_) return;  // that thread delivers ours too, in order
    delivering_ = true;
  }
  for (;;) {
    StateChange change{};
    {
      std::lock_guard lock(state_mutex_);
      if (undelivered_.empty()) {
        delivering_ = false;
        return;
      }
      change = undelivered_.front();
      undelivered_.pop_front();
    }
    deliver(change);
  }
}

void Client::deliver(const StateChange& change) {
  std::unique_lock lock(listeners_mutex_);
  delivering_thread_ = std::this_thread::get_id();
  // Listeners may unsubscribe (themselves or others) or subscribe while we iterate: walk by id.
  std::uint64_t position = 0;
  for (auto it = listeners_.begin(); it != listeners_.end(); it = listeners_.upper_bound(position)) {
    position = it->first;
    const auto listener = it->second;
    if (listener->subscribed_after >= change.number) continue;
    running_listener_ = position;
    lock.unlock();
    try {
      listener->call(change.state);
    } catch (const std::exception& e) {
      log(LogLevel::Error, std::string("a session state listener threw (ignored): ") + e.what());
    } catch (...) {
      log(LogLevel::Error, "a session state listener threw (ignored)");
    }
    lock.lock();
    running_listener_ = 0;
    listener_returned_.notify_all();
  }
  delivering_thread_ = {};
}

}  // namespace dlock::detail

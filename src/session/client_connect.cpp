// Client: connect and credentials. The constructor opens the first handle and waits for its
// session; open_handle() opens every handle (the first, and each renewal's); the credentials are
// sent on each new handle before any request, and a refusal ends the handle (Lost).
#include "src/session/client.hpp"

#include <algorithm>
#include <thread>
#include <utility>

#include "src/base/log_bridge.hpp"
#include "src/base/printable.hpp"
#include "src/session/client_internal.hpp"
#include "src/session/connect_string.hpp"
#include "src/session/janitor.hpp"
#include "src/session/may_block.hpp"
#include "src/session/pending.hpp"
#include "src/session/security_options.hpp"
#include "src/session/test_hooks.hpp"

namespace dlock::detail {
namespace {

constexpr int kHostResolutionDelayMs = 1000;
constexpr std::int64_t kMinRequestedTimeoutMs = 1000;
constexpr std::int64_t kMaxRequestedTimeoutMs = 3'600'000;  // far above any server's maximum

// The chroot suffix of a connect string ("/app" of "host:2181/app"), or "".
std::string_view chroot_of(std::string_view connect) {
  const auto slash = connect.find('/');
  return slash == std::string_view::npos ? std::string_view() : connect.substr(slash);
}

}  // namespace

Client::Client(SessionOptions options)
    : options_(std::move(options)),
      metrics_(options_.metrics),
      acl_((check_credentials(options_.auth), effective_acl(options_.acl, options_.auth))),
      own_loop_(options_.io_context != nullptr ? nullptr : std::make_unique<LoopThread>()),
      loop_(HandleLoop::make(options_.io_context != nullptr ? *options_.io_context : own_loop_->context(),
                             options_.io_context != nullptr)) {
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
  // A failure below leaves no destructor to run: the loop is stopped here (its waits may outlive
  // this object on the application's io_context).
  try {
    // Its connection is read only by the io_context's handlers: waited for here, on a thread that
    // runs them, it would never come.
    if (loop_->external()) check_may_block("constructing a Session");
    install_log_bridge();
    janitor_ = std::make_shared<Janitor>(*this, loop_->context());
    {
      WriterLock lock(handle_mutex_);
      zh_ = open_handle(context_);
      loop_->install(zh_);
    }
    // Read without handle_mutex_: nothing swaps the handle before the constructor returns (the
    // supervisor starts below; close() is not reachable yet).
    if (zh_ == nullptr) {
      throw ConnectError(make_error_code(errc::connect_failed), refused_connect_string_message(options_.connect));
    }
    await_state(steady_deadline_after(options_.connect_timeout),
                [](SessionState s, bool) { return s == SessionState::Connected || s == SessionState::Lost; });
    const bool auth_refused = states_.credentials_refused();
    // A refused credential ends the handle (Lost): await_credentials() says so, not a time-out.
    if (state() != SessionState::Connected && !auth_refused) {
      close_now();  // not close(): on a callback thread that would start a closer thread
      throw ConnectError(make_error_code(errc::connect_failed),
                         "cannot connect to ZooKeeper at \"" + printable(options_.connect) +
                             "\": no server answered within connect_timeout (" + ms(options_.connect_timeout) + ")");
    }
    await_credentials();
    check_chroot();
    start_supervisor();
  } catch (...) {
    // Also for what left before its own clean-up (an exception of the application's handlers,
    // run by drive_until, or out of memory): the handle closed, its completions run, the loop
    // stopped (close_now does all three; a second time it does nothing).
    close_now();
    if (janitor_) janitor_->stop();
    loop_->stop();
    throw;
  }
  if (const auto granted = negotiated_timeout(); granted != options_.session_timeout) {
    log(LogLevel::Warn, "session_timeout " + ms(options_.session_timeout) + " requested from " + options_.connect +
                            "; the server granted " + ms(granted) +
                            " (it clamps timeouts to 2..20 times its tickTime by default)");
  }
}

template <class Done>
bool Client::await_state(const std::optional<Clock::time_point>& until, Done&& done) {
  if (!loop_->external()) return states_.wait(until, done);
  return loop_->drive_until([&] { return done(states_.state(), states_.credentials_refused()); }, until);
}

template <class Result>
Result Client::await_reply(Pending<Result>& pending) {
  if (loop_->external()) loop_->drive_until([&] { return pending.ready(); }, std::nullopt);
  return pending.get();
}

void Client::check_chroot() {
  const auto chroot = chroot_of(options_.connect);
  if (chroot.empty()) return;
  // With a chroot, the C client sends "/" as the chroot node itself.
  Pending<StatResult> root;
  exists("/", root.callback());
  const int rc = await_reply(root).rc;
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
  const auto requested =
      std::clamp<std::int64_t>(options_.session_timeout.count(), kMinRequestedTimeoutMs, kMaxRequestedTimeoutMs);
  zhandle_t* zh = zookeeper_init2(to_c_client_form(options_.connect).c_str(), &Client::on_event,
                                  static_cast<int>(requested), nullptr, context.get(), 0, &zookeeper_log_callback);
  // By default the C client resolves its host list again every time it is asked what it waits
  // for: a resolver round (sockets, binds, random reads) per request, most of the client's CPU
  // time per lock cycle. Once a second is plenty for a list of addresses that rarely changes.
  if (zh != nullptr) zoo_set_servers_resolution_delay(zh, kHostResolutionDelayMs);
  // Before any request: the server applies a connection's packets in order, so every create
  // this handle sends is made by the authenticated identity.
  if (zh != nullptr && !(context->generation > 1 && test_hooks::skip_auth_on_renewal.load()) && !send_credentials(zh)) {
    loop_->close(zh);  // a handle without its identity would fail every create: as if it never opened
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
      rc = loop_->with(zh, [&](zhandle_t* handle) {
        return zoo_add_auth(handle, credentials.scheme.c_str(), credentials.secret.data(),
                            static_cast<int>(credentials.secret.size()), &Client::on_auth_reply, &auth_tags_[i]);
      });
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
  HandleLoop::defer([rc, data] { on_auth_answer(rc, data); });
}

void Client::on_auth_answer(int rc, const void* data) {
  // Only a refusal counts. Any other code means the connection went before the reply (the C
  // client then sends every credential again on the next one), or the handle is closing. The
  // C client hands the first reply's code to every pending completion, so which credential was
  // refused is not known: the error names them all.
  if (rc != ZAUTHFAILED) return;
  Client* self = static_cast<const AuthTag*>(data)->client;
  self->states_.refuse_credentials();
  self->states_.notify_waits();
  log(LogLevel::Error, "ZooKeeper at " + printable(self->options_.connect) + " refused the credentials (" +
                           self->schemes() + "): " + zerror(rc));
}

std::string Client::schemes() const {
  std::string out;
  for (const auto& credentials : options_.auth)
    out += (out.empty() ? "scheme \"" : ", scheme \"") + credentials.scheme + "\"";
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
    const int rc = await_reply(probe).rc;
    if (rc == ZOK || rc == ZNONODE) return;  // ZNONODE: a missing chroot, check_chroot's to report
    if (states_.credentials_refused() || rc == ZAUTHFAILED) {
      throw refused_error("it refused the credentials (" + schemes() + "): " + zerror(ZAUTHFAILED) +
                          " (is there an authentication provider for each scheme on the server?)");
    }
    // ZINVALIDSTATE: the handle failed its authentication, and the reply naming the refused
    // credential may not have been handled yet: wait for it below, then say which was refused.
    if (!reply_lost(rc) && rc != ZCLOSING && rc != ZSESSIONEXPIRED && rc != ZINVALIDSTATE) {
      throw refused_error(zerror(rc));
    }
    if (!await_state(until, [](SessionState s, bool refused) { return s == SessionState::Connected || refused; })) {
      throw refused_error("no server answered with the credentials (" + schemes() +
                          ") accepted within connect_timeout (" + ms(options_.connect_timeout) + ")");
    }
  }
}

}  // namespace dlock::detail

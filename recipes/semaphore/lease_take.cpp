#include "recipes/semaphore/lease_take.hpp"

#include <algorithm>
#include <utility>

#include "dlock/fencing.hpp"
#include "recipes/queue/holder_info.hpp"
#include "recipes/queue/lock_errors.hpp"
#include "recipes/queue/node_name.hpp"
#include "recipes/test_hooks.hpp"
#include "src/base/task_timer.hpp"

namespace dlock::detail {

LeaseTake::LeaseTake(std::shared_ptr<LeaseTaker> taker, std::optional<Clock::time_point> deadline, Done done)
    : client_(taker->client()),
      path_(taker->path()),
      leases_(taker->path() + "/leases"),
      max_leases_(taker->max_leases()),
      deadline_(deadline),
      done_(std::move(done)),
      taker_(std::move(taker)) {}

std::shared_ptr<LeaseTake> LeaseTake::start(std::shared_ptr<LeaseTaker> taker,
                                            std::optional<Clock::time_point> deadline, std::uint64_t owner, Done done) {
  auto take = std::make_shared<LeaseTake>(std::move(taker), deadline, std::move(done));
  take->begin(owner);
  return take;
}

void LeaseTake::begin(std::uint64_t owner) {
  std::shared_ptr<LeaseTaker> taker;
  {
    MutexLock lock(mutex_);
    self_ = shared_from_this();
    taker = taker_;
  }
  report_.emplace(taker->labels());
  if (const auto failure = failure_of([&] {
        tracking_.emplace(client_);
        // On the caller's thread: the lease node names the thread that asked for it.
        node_data_ = holder_info_json();
        task_timer::start(client_.timer_context());
        if (deadline_) {
          const std::weak_ptr<LeaseTake> weak = weak_from_this();
          const auto ticket = task_timer::run_at(
              *deadline_,
              [weak] {
                if (const auto take = weak.lock()) take->on_deadline();
              },
              client_.timer_context());
          MutexLock lock(mutex_);
          timer_ = ticket;
        }
      })) {
    return finish(std::nullopt, failure);
  }
  {
    MutexLock lock(mutex_);
    if (phase_ == Phase::Done) return;  // cancelled already: nothing was started
    mutex_pending_ = true;
  }
  std::shared_ptr<Taker::Take> mutex_take;
  if (const auto failure = failure_of([&] {
        mutex_take = taker->mutex().start_take(
            deadline_, owner, [self = shared_from_this()](std::optional<Grant> grant, std::optional<Failure> why) {
              self->on_mutex(std::move(grant), std::move(why));
            });
      })) {
    bool ended = false;
    {
      MutexLock lock(mutex_);
      mutex_pending_ = false;  // nothing was started
      ended = phase_ == Phase::Done;
    }
    if (!ended) return finish(std::nullopt, failure);
    return complete_deferred();  // a cancel meanwhile waits for this take: it completes now
  }
  bool ended = false;
  {
    MutexLock lock(mutex_);
    if (mutex_pending_) mutex_take_ = mutex_take;
    ended = phase_ == Phase::Done && mutex_pending_;
  }
  // Cancelled while the take started: the take goes too (its completion completes this one).
  if (ended) cancel_mutex_take(*taker, mutex_take, std::nullopt);
}

void LeaseTake::cancel_mutex_take(LeaseTaker& taker, const std::shared_ptr<Taker::Take>& take,
                                  const std::optional<Failure>& reason) noexcept {
  try {
    taker.mutex().cancel_take(take, reason ? *reason
                                           : Failure(Failure::Kind::Error, make_error_code(errc::lock_timeout),
                                                     "semaphore " + path_ + ": the lease take ended"));
  } catch (...) {  // no memory for the reason: the take ends by its own deadline, or stays queued
  }
}

void LeaseTake::on_mutex(std::optional<Grant> grant, std::optional<Failure> failure) {
  // Before the first create: a create waits for the connection (send_create), which a state
  // change brings back. Subscribed with no mutex of this take held (a Client call).
  std::uint64_t listener = 0;
  if (grant) {
    const std::weak_ptr<LeaseTake> weak = weak_from_this();
    failure = failure_of([&] {
      listener = client_.subscribe([weak](SessionState) {
        if (const auto take = weak.lock()) take->on_event();
      });
    });
  }
  bool ended = false;
  std::shared_ptr<LeaseTaker> taker;
  {
    MutexLock lock(mutex_);
    mutex_pending_ = false;
    mutex_take_.reset();
    ended = phase_ == Phase::Done;
    taker = taker_;
    if (!ended && grant) {
      mutex_grant_ = *grant;  // finish() releases it if the subscription failed
      listener_ = listener;
      if (!failure) phase_ = Phase::Creating;
    }
  }
  if (ended) {
    // The take ended while the Mutex's was under way, and waited for it: a grant that raced the
    // end is given back, then the end completes.
    if (listener) client_.unsubscribe(listener);
    if (grant && taker) taker->mutex().release(*grant);
    taker.reset();  // not the last reference: complete() lets taker_ go on the task timer
    return complete_deferred();
  }
  taker.reset();
  if (!grant || failure) return finish(std::nullopt, std::move(failure));
  send_create();
}

void LeaseTake::arm_child_watch() {
  const std::weak_ptr<LeaseTake> weak = weak_from_this();
  std::uint64_t watch = 0;
  const auto armed = failure_of([&] {
    watch = client_.watch_children(leases_, [weak](std::uint64_t) {
      if (const auto take = weak.lock()) take->on_event();
    });
  });
  bool ended = false;
  {
    MutexLock lock(mutex_);
    ended = phase_ == Phase::Done;
    if (!ended) watch_ = watch;
  }
  if (ended && watch) client_.unwatch_children(watch);  // the end came first and found nothing to remove
  if (armed) finish(std::nullopt, armed);
}

void LeaseTake::send_list() {
  {
    MutexLock lock(mutex_);
    if (phase_ != Phase::Listing) return;
  }
  if (const auto failure = failure_of([&] {
        client_.children(
            leases_, [self = shared_from_this()](ChildrenResult result) { self->on_listed(std::move(result)); },
            /*watch=*/true);
      })) {
    finish(std::nullopt, failure);
  }
}

void LeaseTake::on_listed(ChildrenResult result) {
  std::string node;
  std::uint64_t generation = 0;
  std::int64_t czxid = 0;
  {
    MutexLock lock(mutex_);
    if (phase_ != Phase::Listing || !created_) return;
    node = created_->path;
    generation = created_->generation;
    czxid = created_->czxid;
  }
  const std::string what = "semaphore " + path_;
  if (const auto ended = session_failure()) return finish(std::nullopt, ended);
  if (!reply_lost(result.rc)) {
    if (result.rc != ZOK && result.rc != ZNONODE) {
      return finish(std::nullopt, failure_of([&] {
                      fail(client_, result.rc, what + ": listing " + leases_, {kRead, leases_});
                    }));
    }
    const std::string_view ours = std::string_view(node).substr(leases_.size() + 1);
    if (std::find(result.names.begin(), result.names.end(), ours) == result.names.end()) {
      if (const auto ended = session_failure()) return finish(std::nullopt, ended);
      return finish(std::nullopt, failure_of([&] {
                      throw_lock_lost(what + ": our lease node " + node + " vanished while we waited");
                    }));
    }
    if (static_cast<int>(result.names.size()) <= max_leases_ || test_hooks::ignore_lease_limit.load()) {
      if (!client_.owns_nodes_of(generation)) {
        if (const auto ended = session_failure()) return finish(std::nullopt, ended);
        return finish(
            std::nullopt, failure_of([&] {
              throw_lock_lost(what + ": our lease node " + node + " went with an expired session while we waited");
            }));
      }
      {
        MutexLock lock(mutex_);
        if (phase_ != Phase::Listing) return;
        phase_ = Phase::Granting;  // a cancel meanwhile still wins, and deletes the node
      }
      std::optional<TakenLease> lease;
      const auto failure = failure_of([&] {
        Grant grant{node, fencing_token_of(czxid), generation, nullptr, GrantSource::ZooKeeper};
        auto lost = std::move(*tracking_).confirm(generation);
        lease = TakenLease{node, grant.token, std::move(lost), std::move(grant)};
      });
      return finish(failure ? std::nullopt : std::move(lease), failure);
    }
  }
  // Not granted now: wait for a change, or end if the time is up. A child event delivered before
  // this reply reports a change the listing already shows (the ZooKeeper thread delivers events
  // and replies in the server's order, and this runs on it): only one delivered after it wakes the
  // wait. A lost reply: list again once connected (the state listener), at once if the connection
  // is back already; the state is read under the mutex, so a change after it finds Waiting.
  bool expired = false, again = false;
  {
    MutexLock lock(mutex_);
    if (phase_ != Phase::Listing) return;
    expired = expired_;
    if (!expired) {
      again = reply_lost(result.rc) && client_.state() == SessionState::Connected;
      if (!again) phase_ = Phase::Waiting;
    }
  }
  if (expired) return finish(std::nullopt, std::nullopt);
  if (again) send_list();
}

void LeaseTake::on_event() {
  bool list = false, create = false;
  {
    MutexLock lock(mutex_);
    if (phase_ == Phase::Waiting) {
      phase_ = Phase::Listing;
      list = true;
    } else if (phase_ == Phase::Creating && awaiting_connection_) {
      awaiting_connection_ = false;
      create = true;
    }
  }
  if (list) send_list();
  if (create) send_create();
}

void LeaseTake::on_deadline() {
  {
    MutexLock lock(mutex_);
    expired_ = true;
    // The Mutex's take ends by its own deadline; a create or listing under way while connected
    // finishes first (see the header).
    const bool waits = phase_ == Phase::Waiting || (phase_ == Phase::Creating && awaiting_connection_) ||
                       (phase_ == Phase::Listing && client_.state() != SessionState::Connected);
    if (!waits) return;
  }
  finish(std::nullopt, std::nullopt);
}

void LeaseTake::cancel(Failure reason) { finish(std::nullopt, std::move(reason)); }

bool LeaseTake::ended() {
  MutexLock lock(mutex_);
  return phase_ == Phase::Done;
}

std::optional<Failure> LeaseTake::session_failure() const {
  if (!client_.ended()) return std::nullopt;
  return failure_of([&] {
    throw_if_session_ended(client_, "semaphore " + path_);
    throw_lock_lost("semaphore " + path_ + ": the session ended while taking a lease");
  });
}

void LeaseTake::finish(std::optional<TakenLease> lease, std::optional<Failure> failure) {
  std::shared_ptr<LeaseTaker> taker;
  std::shared_ptr<LeaseTake> self;
  std::shared_ptr<Taker::Take> mutex_take;
  std::optional<Grant> mutex_grant;
  std::optional<CreateResult> created;
  std::optional<LostCreate> lost;  // a lost create's node not looked for yet: deleted by its prefix
  std::uint64_t timer = 0, watch = 0, listener = 0;
  bool deferred = false;
  std::optional<Failure> reason;
  {
    MutexLock lock(mutex_);
    if (phase_ == Phase::Done) return;
    phase_ = Phase::Done;
    self = std::move(self_);
    timer = std::exchange(timer_, 0);
    watch = std::exchange(watch_, 0);
    listener = std::exchange(listener_, 0);
    created = std::move(created_);
    lost = std::exchange(lost_create_, std::nullopt);
    // A Mutex take or a create under way: the end completes once it has come back and its node
    // (and the Mutex) went, so that the handler runs after nothing of the request is queued.
    deferred = mutex_pending_ || create_in_flight_;
    taker = taker_;
    mutex_take = mutex_take_;
    if (!create_in_flight_) mutex_grant = std::exchange(mutex_grant_, std::nullopt);
    reason = failure;  // for the Mutex's cancel (a copy: the outcome may take `failure`)
    if (deferred) outcome_.emplace(Outcome{std::move(lease), std::move(failure)});
  }
  task_timer::cancel(timer);
  try {
    if (watch) client_.unwatch_children(watch);
    if (listener) client_.unsubscribe(listener);
    if (!lease && created) client_.release_node(created->path);
    if (lost) client_.release_prefixed(leases_, lost->prefix);
  } catch (...) {  // no memory: a node left goes with the session
  }
  if (mutex_grant) taker->mutex().release(*mutex_grant);
  if (mutex_take) cancel_mutex_take(*taker, mutex_take, reason);
  taker.reset();  // not the last reference: complete() lets taker_ go on the task timer
  if (!deferred) complete(std::move(lease), std::move(failure));
}

void LeaseTake::release_kept_mutex() noexcept {
  std::shared_ptr<LeaseTaker> taker;
  std::optional<Grant> grant;
  {
    MutexLock lock(mutex_);
    taker = taker_;
    grant = std::exchange(mutex_grant_, std::nullopt);
  }
  if (grant && taker) taker->mutex().release(*grant);
}

void LeaseTake::complete_deferred() {
  std::optional<Outcome> outcome;
  {
    MutexLock lock(mutex_);
    outcome = std::exchange(outcome_, std::nullopt);
  }
  if (outcome) complete(std::move(outcome->lease), std::move(outcome->failure));
}

void LeaseTake::complete(std::optional<TakenLease> lease, std::optional<Failure> failure) noexcept {
  std::shared_ptr<LeaseTaker> taker;
  {
    MutexLock lock(mutex_);
    taker = std::move(taker_);
  }
  if (report_) {
    if (lease) {
      report_->granted(lease->grant);
    } else if (failure) {
      report_->failed(*failure);
    } else {
      report_->timed_out();
    }
  }
  auto done = std::move(done_);
  try {
    if (done) done(std::move(lease), std::move(failure));
  } catch (...) {  // the drivers' callbacks do not throw; an exception must not leave a ZooKeeper thread
  }
  task_timer::drop_on_timer(std::move(taker));  // maybe the last reference to the Client
}

}  // namespace dlock::detail

#include "recipes/election/candidacy.hpp"

#include <algorithm>
#include <utility>

#include "dlock/error.hpp"
#include "recipes/holds/held_lock.hpp"
#include "recipes/queue/lock_core.hpp"
#include "recipes/queue/lock_errors.hpp"
#include "recipes/test_hooks.hpp"
#include "src/base/failure.hpp"
#include "src/base/log_bridge.hpp"
#include "src/session/pending.hpp"

namespace dlock::detail {
namespace {

// Between a failed turn and the next: long enough not to spin on a server that refuses, short
// next to a session timeout.
constexpr std::chrono::milliseconds kRetryPause{200};

std::string describe(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "an unknown exception";
  }
}

}  // namespace

thread_local const Candidacy* Candidacy::t_ending = nullptr;

LeaderTerm TermAccess::make(std::int64_t token, std::stop_token stop, std::string path, std::string node) {
  LeaderTerm term;
  term.token_ = token;
  term.stop_ = std::move(stop);
  term.path_ = std::move(path);
  term.node_ = std::move(node);
  return term;
}

Candidacy::Candidacy(std::shared_ptr<Client> client, std::string path, std::string id, LeaderKind kind)
    : client_(std::move(client)),
      path_(std::move(path)),
      id_(std::move(id)),
      kind_(std::move(kind)),
      // Its own taker, never the path's LockSite: a participant keeps a node of its own (two
      // participants of one process are two places in the queue, as in Curator), and the node's
      // data is the id.
      // Reported as a lock family of its path (acquisitions, hold times, losses: dlock/metrics.hpp).
      taker_(std::make_shared<DirectTaker>(
          client_, path_, kind_.policy,
          LockLabels{&client_->metrics(), client_->metrics().family_of(path_, {}), LockMode::Exclusive}, id_)) {}

void Candidacy::start() {
  MutexLock threads(thread_mutex_);
  {
    MutexLock lock(mutex_);
    if (started_) {
      throw Error(make_error_code(errc::invalid_argument),
                  std::string(kind_.recipe) + " " + path_ + ": start() was called before (a participant starts once)");
    }
    if (over_) {
      throw Error(make_error_code(errc::invalid_argument),
                  std::string(kind_.recipe) + " " + path_ + ": start() after close()");
    }
    started_ = true;
    turns_ = 1;
  }
  thread_ = std::jthread([this](std::stop_token closing) { run(std::move(closing)); });
  thread_id_ = thread_.get_id();
}

bool Candidacy::requeue() {
  MutexLock lock(mutex_);
  if (!started_ || over_ || turns_ > 0) return false;
  ++turns_;
  changed_.notify_all();
  return true;
}

void Candidacy::interrupt() {
  std::shared_ptr<std::stop_source> end;
  {
    MutexLock lock(mutex_);
    end = term_end_;
  }
  // Outside the mutex: the term's stop callbacks are the user's.
  if (end) end->request_stop();
}

void Candidacy::take_waiters() { taken_.merge(waiters_); }

void Candidacy::run_waiters(const std::optional<LeaderTerm>& term) {
  for (;;) {
    decltype(taken_)::node_type next;  // run and destroyed outside the mutex
    bool live = false;
    {
      MutexLock lock(mutex_);
      if (taken_.empty()) return;
      live = term && !term->stop_token().stop_requested();
      if (term && !live && !over_) {
        // The term ended before these waiters heard of it: they wait for the next.
        waiters_.merge(taken_);
        return;
      }
      next = taken_.extract(taken_.begin());
    }
    next.mapped()(live ? term : std::nullopt);
  }
}

std::uint64_t Candidacy::when_leading(TermWaiter waiter) {
  std::optional<LeaderTerm> now;
  {
    MutexLock lock(mutex_);
    if (!live_term() && started_ && !over_) {
      const auto id = next_waiter_++;
      waiters_.emplace(id, std::move(waiter));
      return id;
    }
    if (live_term()) now = term_;
  }
  waiter(now);  // a term now, or none can come
  return 0;
}

bool Candidacy::forget(std::uint64_t id) {
  decltype(waiters_)::node_type forgotten;  // destroyed outside the mutex
  MutexLock lock(mutex_);
  forgotten = waiters_.extract(id);
  if (forgotten.empty()) forgotten = taken_.extract(id);  // taken out to run, and not run yet
  return !forgotten.empty();
}

void Candidacy::close() {
  end_candidacy();  // no further turn; awaiting waiters hear that none comes
  interrupt();
  std::stop_source stopping;
  bool join = false;
  {
    MutexLock threads(thread_mutex_);
    if (thread_.joinable() || joining_) {  // (another close() may be joining it now)
      if (thread_.joinable()) stopping = thread_.get_stop_source();
      // Not from the candidacy's own thread (a LeaderSelector callback), nor from a thread the
      // candidacy's thread may be waiting on: a ZooKeeper completion thread or the supervisor
      // (its queued attempt awaits a delete's reply they deliver), or a thread ending this very
      // term (its stop callbacks run there, and the candidacy's thread waits for them to
      // return). The loop then ends by itself; the destructor joins.
      join = thread_id_ != std::this_thread::get_id() && !Client::on_callback_thread() && t_ending != this;
    }
  }
  // Outside the mutex: this requests the term's stop, which runs the user's stop callbacks.
  if (stopping.stop_possible()) stopping.request_stop();  // abandons a wait in the queue: its node is deleted
  if (join) join_thread();
}

void Candidacy::join_thread() {
  // Joined outside thread_mutex_, which callers that must not wait (above) take too; one thread
  // joins, any other that must wait waits for it.
  std::jthread joining;
  {
    UniqueLock threads(thread_mutex_);
    if (joining_) {
      joined_.wait(threads, [&]() DLOCK_REQUIRES(thread_mutex_) { return !joining_; });
      return;
    }
    if (!thread_.joinable()) return;
    joining = std::move(thread_);
    joining_ = true;
  }
  joining.join();
  MutexLock threads(thread_mutex_);
  joining_ = false;
  joined_.notify_all();
}

Candidacy::~Candidacy() {
  close();
  join_thread();  // a close() from a callback left it running
}

std::optional<LeaderTerm> Candidacy::await(const Deadline& deadline) {
  // The caller's stop wakes the wait; notified under the mutex, so it cannot fall between the
  // check of `ready` and the wait. (Declared before `lock`: destroyed after it is unlocked.)
  std::stop_callback on_stop(deadline.stop_token(), [this] {
    MutexLock wake(mutex_);
    changed_.notify_all();
  });
  UniqueLock lock(mutex_);
  const auto ready = [&]() DLOCK_REQUIRES(mutex_) { return over_ || !started_ || live_term() || deadline.stopped(); };
  if (deadline.is_never()) {
    changed_.wait(lock, ready);
  } else if (!changed_.wait_until(lock, *deadline.when(), ready)) {
    return std::nullopt;
  }
  if (live_term()) return term_;
  if (deadline.stopped()) return std::nullopt;
  throw LockLost(make_error_code(errc::lock_lost),
                 std::string(kind_.recipe) + " " + path_ + ": cannot lead: " +
                     (!started_ ? "it was never started" : "it was closed, or its session ended for good"));
}

std::optional<LeaderTerm> Candidacy::term() const {
  MutexLock lock(mutex_);
  return term_;
}

bool Candidacy::ended_for_good() const {
  const auto state = client_->state();
  return state == SessionState::Closed || (state == SessionState::Lost && !client_->options().renew_expired_session);
}

void Candidacy::end_candidacy() {
  {
    MutexLock lock(mutex_);
    over_ = true;
    turns_ = 0;
    changed_.notify_all();
    take_waiters();
  }
  run_waiters(std::nullopt);
}

void Candidacy::pause_before_retry(const std::stop_token& closing, std::chrono::milliseconds pause) {
  {
    UniqueLock lock(mutex_);
    changed_.wait_for(lock, pause, [&]() DLOCK_REQUIRES(mutex_) { return over_; });
  }
  while (!closing.stop_requested() && !ended_for_good()) {
    const auto waited = client_->wait_connected(Deadline::in(kRetryPause).abandoned_by(closing));
    if (waited == WaitResult::ready || waited == WaitResult::abandoned) return;
    if (waited == WaitResult::session_ended) {
      // Lost, with a renewal to come: wait_connected answers at once until then. Pause instead.
      UniqueLock lock(mutex_);
      changed_.wait_for(lock, kRetryPause, [&]() DLOCK_REQUIRES(mutex_) { return over_; });
    }
  }
}

void Candidacy::run(std::stop_token closing) {
  for (;;) {
    {
      UniqueLock lock(mutex_);
      changed_.wait(lock, [&]() DLOCK_REQUIRES(mutex_) { return over_ || turns_ > 0; });
      if (over_) return;
    }
    if (!take_turn(closing)) {
      end_candidacy();
      return;
    }
  }
}

bool Candidacy::take_turn(const std::stop_token& closing) {
  LossTracking tracking(*client_);
  std::optional<Grant> grant;
  try {
    // A follower's wait is meant to last: not one for the wait watchdog.
    grant = taker_->acquire(Deadline::never().abandoned_by(closing), /*watched=*/false);
  } catch (...) {
    if (closing.stop_requested() || ended_for_good()) return false;
    // A drop, or an expiry the Session renews: queue again once connected. The turn stays. A
    // failure that repeats (a refused ACL) is retried ever more slowly, and logged less often.
    failures_ = std::min(failures_ + 1, 6);
    const auto pause = kRetryPause * (1 << (failures_ - 1));  // 0.2 s doubling to 6.4 s
    log(LogLevel::Warn, std::string(kind_.recipe) + " " + path_ + ": queueing failed (" +
                            describe(std::current_exception()) + "); joining again in " +
                            std::to_string(pause.count()) + " ms, once connected");
    pause_before_retry(closing, pause);
    return !closing.stop_requested();
  }
  if (!grant) return !closing.stop_requested();
  failures_ = 0;
  std::optional<HeldLock> confirmed;
  try {
    confirmed = std::move(tracking).confirm(Grant(*grant), taker_->labels());
  } catch (...) {
    taker_->release(*grant);  // a hold nobody would own otherwise; queue again
    log(LogLevel::Warn, std::string(kind_.recipe) + " " + path_ + ": " + describe(std::current_exception()));
    return !closing.stop_requested();
  }
  HeldLock& held = *confirmed;
  auto end = std::make_shared<std::stop_source>();
  LeaderTerm term = TermAccess::make(held.grant.token, end->get_token(), path_, held.grant.node);
  {
    // A loss of the session's trust, or close(), ends the term at once, on the thread that saw
    // it; a close() from the callbacks this runs does not wait for this thread (see close()).
    const auto end_term = [this, end] {
      const auto* outer = std::exchange(t_ending, this);
      end->request_stop();
      t_ending = outer;
    };
    std::stop_callback lost(held.lost->get_token(), end_term);
    std::stop_callback closed(closing, end_term);
    bool publish = false;
    {
      MutexLock lock(mutex_);
      publish = !over_;  // closed while the grant came: never hand out a term after close()
      if (publish) {
        if (!kind_.requeue_after_term) --turns_;
        term_ = term;
        term_end_ = end;
        changed_.notify_all();
        take_waiters();
      }
    }
    if (publish) {
      if (test_hooks::after_taking_term_waiters) test_hooks::after_taking_term_waiters();
      run_waiters(term);
      if (kind_.serve) {
        try {
          kind_.serve(term);
        } catch (...) {
          log(LogLevel::Error, std::string(kind_.recipe) + " " + path_ + ": the leadership callback threw (" +
                                   describe(std::current_exception()) + "); its term ends");
        }
      } else {
        // Registered before the mutex is taken: it runs at once if the term already ended.
        std::stop_callback wake(term.stop_token(), [this] {
          MutexLock inner(mutex_);
          changed_.notify_all();
        });
        UniqueLock lock(mutex_);
        changed_.wait(lock, [&] { return term.stop_token().stop_requested(); });
      }
    }
    end_term();
    {
      MutexLock lock(mutex_);
      term_.reset();
      term_end_.reset();
      changed_.notify_all();
    }
  }
  // Only now, with the term over here, may another participant lead.
  held.loss_report.reset();  // a loss from now on is not this term's
  taker_->release(held.grant);
  const bool lost = held.lost->stop_requested();
  if (closing.stop_requested() || ended_for_good()) return false;
  if (lost) pause_before_retry(closing, std::chrono::milliseconds(0));
  return !closing.stop_requested();
}

std::vector<Participant> Candidacy::participants() const {
  const std::string what = std::string(kind_.recipe) + " " + path_ + ": participants";
  throw_if_session_ended(*client_, what);
  std::vector<Participant> out;
  for (const auto& name : detail::participants(*client_, path_)) {
    Pending<DataResult> read;
    client_->get(path_ + "/" + name, read.callback());
    auto data = read.get();
    if (data.rc == ZNONODE) continue;  // left since the listing
    if (data.rc != ZOK) fail(*client_, data.rc, what + ": reading " + path_ + "/" + name);
    out.push_back(Participant{std::move(data.data), path_ + "/" + name, out.empty()});
  }
  return out;
}

}  // namespace dlock::detail

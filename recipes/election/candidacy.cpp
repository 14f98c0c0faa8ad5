#include "recipes/election/candidacy.hpp"

#include <algorithm>
#include <atomic>
#include <utility>

#include "dlock/error.hpp"
#include "recipes/queue/held_nodes.hpp"
#include "recipes/queue/lock_core.hpp"
#include "recipes/queue/lock_errors.hpp"
#include "recipes/test_hooks.hpp"
#include "src/base/failure.hpp"
#include "src/base/log_bridge.hpp"
#include "src/base/task_timer.hpp"
#include "src/session/pending.hpp"

namespace dlock::detail {
namespace {

// Between a failed turn and the next: long enough not to spin on a server that refuses, short
// next to a session timeout.
constexpr std::chrono::milliseconds kRetryPause{200};

// What a failed take says, for the log: its message, or its code's.
std::string reason_of(const Failure& failure) {
  return failure.message().empty() ? failure.code().message() : failure.message();
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
          LockLabels{&client_->metrics(), client_->metrics().family_of(path_, {}), LockMode::Exclusive}, id_)),
      owner_(held_nodes::new_token()) {}

void Candidacy::start() {
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
  task_timer::start();  // here, where it may still throw: the pauses and drops need it
  begin_turn();
}

bool Candidacy::requeue() {
  {
    MutexLock lock(mutex_);
    if (!started_ || over_ || turns_ > 0) return false;
    ++turns_;
  }
  begin_turn();  // none if a term still runs: its end begins the turn
  return true;
}

void Candidacy::begin_turn() {
  std::uint64_t turn = 0;
  {
    MutexLock lock(mutex_);
    if (over_ || turns_ == 0 || phase_ != Phase::idle) return;
    phase_ = Phase::queued;
    turn = ++turn_;
  }
  std::weak_ptr<Candidacy> weak = weak_from_this();
  HeldTake take;
  try {
    // A follower's wait is meant to last: a take is not one for the wait watchdog.
    take = taker_->start_held(
        taker_, std::nullopt, owner_,
        [weak, taker = taker_](std::optional<HeldLock> held, std::optional<Failure> failure) mutable {
          if (auto self = weak.lock()) {
            try {
              self->on_taken(std::move(held), std::move(failure));
            } catch (...) {  // nothing may leave a ZooKeeper thread; on_taken lets a grant go itself
            }
            task_timer::drop_on_timer(std::move(self));
          } else if (held) {
            taker->release(held->grant);  // the candidacy went meanwhile
          }
          task_timer::drop_on_timer(std::move(taker));
        });
  } catch (...) {
    take_failed(Failure::current());  // could not even start (out of memory)
    return;
  }
  bool cancel = false;
  {
    MutexLock lock(mutex_);
    if (phase_ == Phase::queued && turn_ == turn) {
      take_ = take.take;
      cancel = over_;  // closed while it started: close() found no take to cancel
    }
  }
  if (cancel) take.cancel(Failure::of(lock_destroyed(std::string(kind_.recipe) + " " + path_)));
}

void Candidacy::on_taken(std::optional<HeldLock> held, std::optional<Failure> failure) {
  if (held) {
    lead(std::move(*held));
  } else {
    take_failed(std::move(failure));
  }
}

void Candidacy::take_failed(std::optional<Failure> failure) noexcept {
  int failures = 0;
  bool again = false;
  {
    MutexLock lock(mutex_);
    take_.reset();
    phase_ = Phase::idle;
    again = !over_;
    if (again) failures = failures_ = std::min(failures_ + 1, 6);
  }
  if (!again) return;  // closed: close() ended the candidacy
  if (ended_for_good()) {
    end_candidacy();
    return;
  }
  // A drop, or an expiry the Session renews: queue again once connected. A failure that repeats
  // (a refused ACL) is retried ever more slowly, and logged less often.
  const auto pause = kRetryPause * (1 << (failures - 1));  // 0.2 s doubling to 6.4 s
  try {
    log(LogLevel::Warn, std::string(kind_.recipe) + " " + path_ + ": queueing failed (" +
                            (failure ? reason_of(*failure) : std::string("no thread to serve its term")) +
                            "); joining again in " + std::to_string(pause.count()) + " ms, once connected");
  } catch (...) {  // no memory for the message: the retry matters more
  }
  retry_after(pause);
}

void Candidacy::retry_after(std::chrono::milliseconds pause) noexcept {
  std::uint64_t pause_seq = 0;
  {
    MutexLock lock(mutex_);
    if (over_ || phase_ != Phase::idle) return;
    phase_ = Phase::pausing;
    pause_seq = ++pause_seq_;
  }
  std::weak_ptr<Candidacy> weak = weak_from_this();
  std::uint64_t ticket = 0;
  try {
    ticket = task_timer::run_at(Clock::now() + pause, [weak, pause_seq] {
      if (auto self = weak.lock()) self->retry_when_connected(pause_seq);  // dropped here, on the timer's thread
    });
  } catch (...) {
    try {
      log(LogLevel::Error, std::string(kind_.recipe) + " " + path_ + ": cannot schedule the next turn (" +
                               reason_of(Failure::current()) + "); the candidacy ends");
    } catch (...) {
    }
    end_candidacy();
    return;
  }
  MutexLock lock(mutex_);
  // Unless the task ran already (and maybe paused again, with a ticket of its own).
  if (phase_ == Phase::pausing && pause_seq_ == pause_seq) pause_ticket_ = ticket;
}

void Candidacy::retry_when_connected(std::uint64_t pause_seq) {
  {
    MutexLock lock(mutex_);
    if (pause_seq != pause_seq_ || over_ || phase_ != Phase::pausing) return;
    pause_ticket_ = 0;
  }
  if (ended_for_good()) {
    end_candidacy();
    return;
  }
  {
    MutexLock lock(mutex_);
    phase_ = Phase::idle;
  }
  if (client_->state() != SessionState::Connected) {
    // Suspended, or Lost with a renewal to come: look again in a while (a timer task, no thread).
    retry_after(kRetryPause);
    return;
  }
  begin_turn();
}

void Candidacy::close() {
  end_candidacy();  // no further turn; awaiting waiters hear that none comes
  std::shared_ptr<Taker::Take> take;
  std::uint64_t ticket = 0;
  {
    MutexLock lock(mutex_);
    take = std::exchange(take_, nullptr);
    ticket = std::exchange(pause_ticket_, 0);
  }
  task_timer::cancel(ticket);
  // A queued take: its node's delete is sent first; a grant that raced the cancel is let go by
  // lead(), which sees the candidacy over.
  if (take) {
    try {
      taker_->cancel_take(take, Failure::of(lock_destroyed(std::string(kind_.recipe) + " " + path_)));
    } catch (...) {  // out of memory: the take ends by itself, and lead() lets its grant go
    }
  }
  end_current_term();  // outside the mutex: this runs the user's stop callbacks
  // A selector waits for its callback, except where the callback may be waiting on this thread:
  // the callback itself, a session's ZooKeeper thread or the supervisor (a take's replies come
  // there), or a thread ending this very term (its stop callbacks run there, and the callback may
  // wait for them). The thread then ends by itself; the destructor joins it.
  bool join = false;
  {
    MutexLock threads(thread_mutex_);
    join = (server_.joinable() || joining_) && server_id_ != std::this_thread::get_id() &&
           !Client::on_callback_thread() && t_ending != this;
  }
  if (join) join_server();
}

void Candidacy::join_server() {
  std::thread joining;
  {
    UniqueLock threads(thread_mutex_);
    if (joining_) {
      joined_.wait(threads, [&]() DLOCK_REQUIRES(thread_mutex_) { return !joining_; });
      return;
    }
    if (!server_.joinable()) return;
    if (server_id_ == std::this_thread::get_id()) {
      server_.detach();  // the candidacy's last reference went with its own callback's end
      return;
    }
    joining = std::move(server_);
    joining_ = true;
  }
  joining.join();
  MutexLock threads(thread_mutex_);
  joining_ = false;
  joined_.notify_all();
}

Candidacy::~Candidacy() {
  close();
  join_server();  // a close() from a callback left it running
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

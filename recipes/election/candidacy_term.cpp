// Candidacy (candidacy.hpp): a term, from the grant that begins it to the delete that ends it.
#include "recipes/election/candidacy.hpp"

#include <atomic>
#include <exception>
#include <utility>

#include "recipes/test_hooks.hpp"
#include "src/base/log_bridge.hpp"
#include "src/base/task_timer.hpp"

namespace dlock::detail {
namespace {

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

// One granted term, made in lead(). current_ keeps it until finish_term(), which hands it to the
// task timer's thread to let go (the thread finishing it may be inside the loss callback below).
//
// A term is finished (unpublished, its node's delete sent) once every party to its end has
// arrived: the thread whose request_stop() ended it, after the term's stop callbacks returned;
// and for a selector also its term thread, after the callback returned. So the delete, and
// whoever leads next, always come after the stop callbacks and the callback.
struct Candidacy::Term {
  explicit Term(bool serves) : parties(serves ? 2 : 1) {}
  HeldLock held;
  std::shared_ptr<std::stop_source> end = std::make_shared<std::stop_source>();
  LeaderTerm term;
  std::atomic<int> parties;
  bool pause_next = false;  // no thread could serve it: the next turn waits a retry pause
  // The hold's loss ends the term, on the thread that saw it (the callback finds the term by
  // address in current_, so it keeps no reference to it).
  std::optional<std::stop_callback<std::function<void()>>> on_lost;
};

void Candidacy::lead(HeldLock held) {
  std::shared_ptr<Term> term;
  bool moved = false;
  try {
    term = std::make_shared<Term>(static_cast<bool>(kind_.serve));
    term->term = TermAccess::make(held.grant.token, term->end->get_token(), path_, held.grant.node);
    term->held = std::move(held);
    moved = true;
    // Registered before the term is published, so that the allocation cannot fail after it; a
    // loss that comes first is looked at below, once the term is current.
    std::weak_ptr<Candidacy> weak = weak_from_this();
    const Term* address = term.get();
    term->on_lost.emplace(term->held.lost->get_token(), [weak, address] {
      auto self = weak.lock();
      if (!self) return;
      std::shared_ptr<Term> lost;
      {
        MutexLock lock(self->mutex_);
        if (self->current_.get() == address) lost = self->current_;
      }
      if (lost) self->end_term(lost);
      task_timer::drop_on_timer(std::move(self));
    });
  } catch (...) {  // out of memory: a hold nobody would own; the turn is tried again
    taker_->release(moved ? term->held.grant : held.grant);
    take_failed(Failure::current());
    return;
  }
  bool publish = false;
  {
    MutexLock lock(mutex_);
    take_.reset();
    failures_ = 0;
    publish = !over_;  // closed while the grant came: never hand out a term after close()
    if (publish) {
      phase_ = Phase::leading;
      if (!kind_.requeue_after_term) --turns_;  // this turn is served; requeue() may ask for another
      current_ = term;
      term_ = term->term;
      changed_.notify_all();
      take_waiters();
    } else {
      phase_ = Phase::idle;
    }
  }
  if (!publish) {
    term->held.loss_report.reset();
    taker_->release(term->held.grant);
    return;
  }
  if (term->held.lost->stop_requested()) end_term(term);  // lost before the term was current
  if (test_hooks::after_taking_term_waiters) test_hooks::after_taking_term_waiters();
  run_waiters(term->term);
  if (kind_.serve) serve(term);
}

void Candidacy::serve(const std::shared_ptr<Term>& term) {
  {
    MutexLock threads(thread_mutex_);
    bool open = false;
    {
      // Looked at under thread_mutex_: a close() that came first finds no thread and the term
      // ended below; one that comes after finds the thread and waits for it.
      MutexLock lock(mutex_);
      open = !over_ && current_ == term;
    }
    if (open) {
      // The previous term's thread has finished its term, and so is done or about to be.
      if (server_.joinable()) {
        if (server_id_ == std::this_thread::get_id()) {
          server_.detach();  // this very thread began the turn as it finished the last
        } else {
          server_.join();
        }
      }
      try {
        // The thread keeps the candidacy alive until its end, and lets it go on the task timer.
        server_ = std::thread([self = shared_from_this(), term]() mutable {
          try {
            self->kind_.serve(term->term);
          } catch (...) {
            log(LogLevel::Error, std::string(self->kind_.recipe) + " " + self->path_ +
                                     ": the leadership callback threw (" + describe(std::current_exception()) +
                                     "); its term ends");
          }
          self->end_term(term);
          self->arrive(term);  // the callback returned
          task_timer::drop_on_timer(std::move(self));
        });
        server_id_ = server_.get_id();
        return;
      } catch (...) {
        log(LogLevel::Error, std::string(kind_.recipe) + " " + path_ + ": no thread for the leadership callback (" +
                                 describe(std::current_exception()) + "); its term ends");
        term->pause_next = true;
      }
    }
  }
  // Closed before the callback could start, or no thread for it: the term ends here (outside
  // thread_mutex_: its stop callbacks may close the selector), as if the callback returned.
  end_term(term);
  arrive(term);
}

void Candidacy::end_term(const std::shared_ptr<Term>& term) {
  const auto* outer = std::exchange(t_ending, this);
  const bool ended_here = term->end->request_stop();  // the term's stop callbacks (the user's) run here
  t_ending = outer;
  // Another thread that asked too may still be running the stop callbacks: that one arrives.
  if (ended_here) arrive(term);
}

void Candidacy::arrive(const std::shared_ptr<Term>& term) {
  if (term->parties.fetch_sub(1) == 1) finish_term(term);
}

void Candidacy::end_current_term() {
  std::shared_ptr<Term> term;
  {
    MutexLock lock(mutex_);
    term = current_;
  }
  if (term) end_term(term);
}

void Candidacy::interrupt() { end_current_term(); }

void Candidacy::finish_term(const std::shared_ptr<Term>& term) {
  {
    MutexLock lock(mutex_);
    if (current_ == term) {
      current_.reset();
      term_.reset();
      phase_ = Phase::idle;
      changed_.notify_all();
    }
  }
  // Only now, with the term over here, may another participant lead.
  const bool lost = term->held.lost->stop_requested();
  term->held.loss_report.reset();  // a loss from now on is not this term's
  taker_->release(term->held.grant);
  const bool pause = term->pause_next;
  task_timer::drop_on_timer(std::shared_ptr<Term>(term));
  if (pause) {
    take_failed(std::nullopt);  // counted as a failed take: paused, ever longer if it repeats
  } else if (lost) {
    retry_after(std::chrono::milliseconds(0));  // once the session is back
  } else {
    begin_turn();
  }
}

}  // namespace dlock::detail

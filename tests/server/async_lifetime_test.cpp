// dlock/async.hpp's lifetime promise: once an operation's handler has run, the application may
// destroy the handler's execution context at once, as Asio's own operations allow. dlock must
// not touch that context (its executor, its outstanding-work count) after handing the handler
// over. Each acquisition below runs on its own io_context on the heap, destroyed the moment its
// handler has run; the sanitizer build reports any later touch as a heap-use-after-free, and
// every build checks that the context had no work outstanding once the handler ran (work that a
// dlock thread still holds then is released later, on memory that may be gone).
//
// Every completion path: grants, time-outs, cancellations and a session's end behind another
// client's hold; and, behind a hold of the same Session (with hand-off on, a local waiter: the
// cohort's hand-over, its deadline, the session's end), through the handle and the guard forms,
// with local hand-off on and off. Each ends on a dlock thread (a ZooKeeper completion thread, the
// task timer, the closing thread), never on the thread that runs the context.
#include <gtest/gtest.h>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/io_context.hpp>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <tuple>

#include "dlock/async.hpp"
#include "dlock/dlock.hpp"
#include "test_env.hpp"

namespace dlock::testing {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using boost::system::error_code;

enum class Form { Handle, Guard };
enum class Outcome { Grant, Timeout, Cancel, SessionEnd, HandOver, LocalTimeout, LocalSessionEnd };

bool behind_this_session(Outcome outcome) {
  return outcome == Outcome::HandOver || outcome == Outcome::LocalTimeout || outcome == Outcome::LocalSessionEnd;
}
bool bounded(Outcome outcome) { return outcome == Outcome::Timeout || outcome == Outcome::LocalTimeout; }
bool ends_session(Outcome outcome) { return outcome == Outcome::SessionEnd || outcome == Outcome::LocalSessionEnd; }

std::string name_of(Form form) { return form == Form::Handle ? "Handle" : "Guard"; }
std::string name_of(Outcome outcome) {
  switch (outcome) {
    case Outcome::Grant:
      return "Grant";
    case Outcome::Timeout:
      return "Timeout";
    case Outcome::Cancel:
      return "Cancel";
    case Outcome::SessionEnd:
      return "SessionEnd";
    case Outcome::HandOver:
      return "HandOver";
    case Outcome::LocalTimeout:
      return "LocalTimeout";
    case Outcome::LocalSessionEnd:
      return "LocalSessionEnd";
  }
  return "?";
}

int iterations_for(Outcome outcome) {
  switch (outcome) {
    case Outcome::Grant:
      return 150;
    case Outcome::Timeout:
      return 40;
    case Outcome::Cancel:
      return 40;
    case Outcome::SessionEnd:
      return 12;
    case Outcome::HandOver:
      return 40;
    case Outcome::LocalTimeout:
      return 40;
    case Outcome::LocalSessionEnd:
      return 12;
  }
  return 0;
}

SessionOptions options_with_handoff(bool handoff) {
  auto options = session_options();
  options.handoff.local = handoff;
  return options;
}

using Param = std::tuple<bool, Form, Outcome>;

class AsyncLifetime : public ::testing::TestWithParam<Param> {};

// What one acquisition reports back to the test once its context is gone.
struct Result {
  bool ran = false;
  error_code ec;
  bool held = false;
  bool work_outstanding_after_handler = false;
};

TEST_P(AsyncLifetime, TheHandlersContextMayBeDestroyedAsSoonAsTheHandlerRan) {
  const auto [handoff, form, outcome] = GetParam();
  const std::string base = test_root();
  auto session = std::make_unique<Session>(options_with_handoff(handoff));
  Session blocker_session(session_options());
  // The key's path, as the guard form makes it; the handle form locks the same path.
  const std::string path = LockService(blocker_session, base).lock(LockMode::Exclusive, "ns", "k").path();
  Mutex probe(blocker_session, path);

  int busy = 0;
  for (int i = 0; i < iterations_for(outcome); ++i) {
    if (!session) session = std::make_unique<Session>(options_with_handoff(handoff));
    // Contention for every outcome but a grant: another client holds the lock, or this Session.
    LockHandle blocker;
    if (behind_this_session(outcome)) {
      blocker = LockHandle::acquire(*session, path);
    } else if (outcome != Outcome::Grant) {
      blocker = LockHandle::acquire(blocker_session, path);
    }
    std::optional<Mutex> local_probe(std::in_place, *session, path);

    auto ctx = std::make_unique<asio::io_context>();
    asio::cancellation_signal cancel;
    std::thread closer;
    Result result;
    LockHandle handle;
    ScopeGuard guard;
    auto on_handle = [&](error_code ec, LockHandle got) {
      result.ran = true;
      result.ec = ec;
      result.held = got.held();
      handle = std::move(got);
    };
    auto on_guard = [&](error_code ec, ScopeGuard got) {
      result.ran = true;
      result.ec = ec;
      result.held = static_cast<bool>(got);
      guard = std::move(got);
    };
    const bool timed = bounded(outcome);
    if (form == Form::Handle) {
      auto handler = asio::bind_cancellation_slot(cancel.slot(), asio::bind_executor(*ctx, on_handle));
      if (timed) {
        LockHandle::async_try_acquire_for(*session, path, LockMode::Exclusive, 20ms, std::move(handler));
      } else {
        LockHandle::async_acquire(*session, path, LockMode::Exclusive, std::move(handler));
      }
    } else {
      auto handler = asio::bind_cancellation_slot(cancel.slot(), asio::bind_executor(*ctx, on_guard));
      LockService(*session, base, timed ? 20ms : 30s).async_lock(LockMode::Exclusive, "ns", "k", std::move(handler));
    }

    // The end comes from a dlock thread for each outcome: the grant's reply, the task timer, the
    // delete's reply after a cancel, the session's close.
    if (outcome == Outcome::Cancel || ends_session(outcome) || outcome == Outcome::HandOver) {
      // Queued: a node of its own behind the blocker's, or a local waiter behind this Session's.
      auto queued = [&] { return probe.participants().size() >= 2 || local_probe->local_waiters() >= 1; };
      const auto until = std::chrono::steady_clock::now() + 10s;
      while (!queued() && std::chrono::steady_clock::now() < until) ctx->run_for(2ms);
      ASSERT_TRUE(queued()) << "iteration " << i << ": the acquisition never queued";
      if (outcome == Outcome::Cancel) {
        cancel.emit(asio::cancellation_type::terminal);
      } else if (outcome == Outcome::HandOver) {
        blocker.release();
      } else {
        closer = std::thread([&session] { session->close(); });
      }
    }

    // As an application does: run until the handler ran, then destroy the context at once.
    const auto until = std::chrono::steady_clock::now() + 20s;
    while (!result.ran && std::chrono::steady_clock::now() < until) ctx->run_one_for(100ms);
    ASSERT_TRUE(result.ran) << "iteration " << i << ": the handler never ran";
    // The handler's operation was this context's only work: none may be outstanding now.
    if (!ctx->stopped()) ++busy;
    ctx.reset();

    switch (outcome) {
      case Outcome::Grant:
      case Outcome::HandOver:
        EXPECT_FALSE(result.ec) << result.ec.message();
        EXPECT_TRUE(result.held);
        break;
      case Outcome::Timeout:
      case Outcome::LocalTimeout:
        EXPECT_FALSE(result.held);
        break;
      case Outcome::Cancel:
        EXPECT_EQ(result.ec, asio::error::operation_aborted) << result.ec.message();
        break;
      case Outcome::SessionEnd:
      case Outcome::LocalSessionEnd:
        EXPECT_TRUE(result.ec);
        EXPECT_FALSE(result.held);
        break;
    }
    if (handle.held()) handle.release();
    guard = ScopeGuard();
    if (blocker.held()) blocker.release();
    local_probe.reset();
    if (closer.joinable()) {
      closer.join();
      session.reset();
    }
  }
  EXPECT_EQ(busy, 0) << busy << " of " << iterations_for(outcome)
                     << " contexts still had outstanding work right after their handler ran: dlock released its "
                        "work on the handler's context later, from its own thread";
}

INSTANTIATE_TEST_SUITE_P(AllPaths, AsyncLifetime,
                         ::testing::Combine(::testing::Bool(), ::testing::Values(Form::Handle, Form::Guard),
                                            ::testing::Values(Outcome::Grant, Outcome::Timeout, Outcome::Cancel,
                                                              Outcome::SessionEnd, Outcome::HandOver,
                                                              Outcome::LocalTimeout, Outcome::LocalSessionEnd)),
                         [](const ::testing::TestParamInfo<Param>& param_info) {
                           const auto& p = param_info.param;
                           return std::string(std::get<0>(p) ? "HandoffOn" : "HandoffOff") + name_of(std::get<1>(p)) +
                                  name_of(std::get<2>(p));
                         });

}  // namespace
}  // namespace dlock::testing

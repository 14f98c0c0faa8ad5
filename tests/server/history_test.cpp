// The history checker (dlock/testing/history.hpp) on a real server: an acquisition whose create's
// reply is lost is indeterminate; with dlock's adoption of such a node the history is clean, and
// with adoption switched off (test_hooks::skip_adoption) the checker catches the ghost holder: the
// orphan node granted while its client does not know it holds (and then believes it failed).
#include <gtest/gtest.h>

#include <zookeeper/proto.h>

#include <cstdio>
#include <stdexcept>
#include <thread>

#include "dlock/dlock.hpp"
#include "dlock/testing/fault_proxy.hpp"
#include "dlock/testing/history.hpp"
#include "dlock/testing/temp_dir.hpp"
#include "raw_zk.hpp"
#include "recipes/test_hooks.hpp"
#include "test_env.hpp"

namespace dlock::testing {
namespace {

using namespace std::chrono_literals;

std::string hex(std::int64_t id) {
  char buffer[24];
  std::snprintf(buffer, sizeof buffer, "0x%llx", static_cast<unsigned long long>(id));
  return buffer;
}

// One client through a proxy that loses its create's reply once, then a second client wanting
// the same lock; each logs its acquisitions (holds, or failures with their invocation time).
HistoryReport lost_create_reply_then_another_client() {
  TempDir dir("dlock-history");
  const std::string log = dir.path() + "/holds.log", heads = dir.path() + "/heads.log";
  HoldLogWriter writer(log);
  Session observing(session_options());
  HeadObserver observer(observing, test_root(), heads);

  FaultProxy proxy(zk_server().port());
  Session session({.connect = proxy.connect_string(), .session_timeout = 4s});
  Session other(session_options());
  const auto attempt = [&](Session& s, const std::string& client, std::chrono::milliseconds patience) {
    Mutex mutex(s, test_root());
    const auto asked = HoldLogWriter::now_ns();
    if (!mutex.try_lock_for(patience)) {
      writer.record(HoldEvent{client, hex(s.id()), "timeout", "", HoldLogWriter::now_ns(), asked, 0});
      return;
    }
    const auto enter = HoldLogWriter::now_ns();
    std::this_thread::sleep_for(300ms);  // long enough for the observer to see it at the head
    writer.record(HoldRecord{client, hex(s.id()), "exclusive", mutex.fencing_token(), enter, HoldLogWriter::now_ns(),
                             false, false, asked});
    mutex.unlock();
  };
  // The lock's directory exists first, so the reply lost is that of the contender's create.
  RawZk zk(zk_connect());
  if (make_lasting_path(zk, test_root()) != ZOK) throw std::runtime_error("cannot make " + test_root());
  proxy.drop_reply_to_request(ZOO_CREATE2_OP);
  // Without adoption, a waits behind its own orphan, which holds the lock, until a gives up and
  // deletes its nodes: a ghost holder for those 3 s.
  attempt(session, "a", 3s);
  attempt(other, "b", 4s);
  observer.stop();
  return check_history(read_hold_logs({log}), read_hold_events({log, heads}), {.ghost_after = 2s});
}

TEST(History, ALostCreateReplyIsAdoptedAndTheHistoryHasNoGhost) {
  const auto report = lost_create_reply_then_another_client();
  EXPECT_TRUE(report.ok()) << report.summary();
  EXPECT_EQ(report.holds.holds, 2u) << report.summary();
  EXPECT_EQ(report.ghost_holders, 0u) << report.summary();
  EXPECT_GE(report.heads_seen, 2u) << report.summary();
}

TEST(History, NegativeControlWithoutAdoptionTheCheckerCatchesTheGhostHolder) {
  ScopedHook no_adoption(detail::test_hooks::skip_adoption);
  const auto report = lost_create_reply_then_another_client();
  EXPECT_FALSE(report.ok());
  EXPECT_EQ(report.ghost_holders, 1u) << report.summary();
  EXPECT_EQ(report.indeterminate, 1u) << "a's acquisition failed: " << report.summary();
  EXPECT_EQ(report.holds.holds, 1u) << "b's went through once a gave up: " << report.summary();
  EXPECT_EQ(report.holds.exclusive_overlaps, 0u) << "a ghost writes nothing: " << report.summary();
  EXPECT_NE(report.summary().find("ghost holder: node _c_"), std::string::npos) << report.summary();
}

}  // namespace
}  // namespace dlock::testing
